"""The table printed after a run: per workload, each filesystem's median and spread."""
from __future__ import annotations

import orjson
from rich.console import Console
from rich.table import Table

from fslab.analysis.names import metric_label
from fslab.report.format import human, human_spread   # one number format for every output

# The first of these sets present in a workload is its table's columns (throughput; the
# fate of damaged blocks, where "detected" has no direction but says the most); other
# workloads show their first directional metrics.
THROUGHPUT = ("read_iops", "write_iops", "read_bw", "write_bw")
HEADLINE = (THROUGHPUT,
            ("damaged", "detected", "silent", "healed", "healed_after_scrub", "collateral_damage"))
MAX_METRICS = 4


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
        present = set(g.metric)
        metrics = next(([m for m in ms if m in present] for ms in HEADLINE
                        if present.intersection(ms)), [])
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
            t.add_column(f"{metric_label(m)}{arrow}", justify="right")
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
