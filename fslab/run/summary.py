"""The table printed after a run: per workload, each filesystem's median and spread."""
from __future__ import annotations

import orjson
from rich.console import Console
from rich.table import Table

# Shown first when present; other suites fall back to their directional metrics.
HEADLINE = ("read_iops", "write_iops", "read_bw", "write_bw")
MAX_METRICS = 4


_SCALES = {
    "B/s": (("GiB/s", 1 << 30), ("MiB/s", 1 << 20), ("KiB/s", 1 << 10), ("B/s", 1)),
    "B": (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10), ("B", 1)),
    "ns": (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1)),
}
_SCALES["bytes/s"], _SCALES["bytes"] = _SCALES["B/s"], _SCALES["B"]


def scale_for(value: float, unit: str) -> tuple[str, float]:
    """The display unit and divisor that suit `value` (e.g. 3e7 B/s -> MiB/s)."""
    for name, f in _SCALES.get(unit, ()):
        if abs(value) >= f:
            return name, f
    return (_SCALES[unit][-1] if unit in _SCALES else (unit, 1))


from fslab.report.format import number as _num   # one number format for every table


def human(value: float, unit: str) -> str:
    name, f = scale_for(value, unit)
    return f"{_num(value / f)} {'' if name == 'ops/s' else name}".strip()


def human_spread(median: float, lo: float, hi: float, unit: str) -> str:
    """'33.1 MiB/s (32.9–33.2)': the spread in the median's own unit."""
    name, f = scale_for(median, unit)
    suffix = "" if name == "ops/s" else f" {name}"
    return f"{_num(median / f)}{suffix} ({_num(lo / f)}–{_num(hi / f)})"


def _params_label(params: str) -> str:
    d = orjson.loads(params)
    d.pop("workload", None)
    return " ".join(f"{k}={v}" for k, v in d.items())


def print_run_summary(store, run_id: str, console: Console) -> None:
    df = store.records(run_id)
    units = store.units(run_id)
    failed = [u for u in units if u["status"] == "failed"]
    if df.empty:
        console.print("no measurements stored" + (f"; {len(failed)} units failed" if failed else ""))
    for (suite, case, params), g in df.groupby(["suite", "case", "params"], sort=True):
        metrics = [m for m in HEADLINE if m in set(g.metric)]
        if not metrics:
            directional = g[g.better.notna()].metric.unique().tolist()
            metrics = directional[:MAX_METRICS]
        if not metrics:
            continue
        extra = _params_label(params)
        t = Table(title=f"{suite}: {case}{' ' + extra if extra else ''}", title_justify="left")
        t.add_column("filesystem")
        for m in metrics:
            unit = g[g.metric == m].unit.iloc[0]
            arrow = {"higher": " ↑", "lower": " ↓"}.get(g[g.metric == m].better.iloc[0], "")
            t.add_column(f"{m}{arrow}", justify="right")
        t.add_column("n", justify="right")
        for (fs, variant), h in g.groupby(["fs", "variant"], sort=True):
            row = [fs if variant == "default" else f"{fs}:{variant}"]
            n = 0
            for m in metrics:
                v = h[h.metric == m].value
                n = max(n, len(v))
                if v.empty:
                    row.append("-")
                    continue
                unit = h[h.metric == m].unit.iloc[0]
                row.append(human_spread(v.median(), v.min(), v.max(), unit) if len(v) > 1
                           else human(v.median(), unit))
            row.append(str(n))
            t.add_row(*row)
        console.print(t)
    console.print("median (min – max) over iterations; ↑ higher is better, ↓ lower is better.")
    for u in failed[:10]:
        console.print(f"[red]failed[/] {u['fs']}/{u['variant']} {u['suite']}:{u['case']} "
                      f"#{u['iteration']}: {u['message']}")
    console.print(f"raw files (fio job files, JSON, logs): {store.run_dir(run_id)}")
