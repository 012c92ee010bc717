"""The table printed after a run: per workload, each filesystem's median and spread."""
from __future__ import annotations

import orjson
from rich.console import Console
from rich.table import Table

from fslab.analysis.names import metric_label
from fslab.report.headline import ANSWERS, job_answer
from fslab.report.format import human, human_spread   # one number format for every output

# A workload's table: the fate of damaged blocks, where "detected" has no direction but says
# the most; else the metric that answers the workload (fslab.report.headline.ANSWERS, as in
# the answer line), throughput, then its other directional metrics.
THROUGHPUT = ("read_iops", "write_iops", "read_bw", "write_bw")
OUTCOMES = ("damaged", "detected", "silent", "healed", "healed_after_scrub", "collateral_damage")
MAX_METRICS = 4


def _params_label(params: str) -> str:
    d = orjson.loads(params)
    d.pop("workload", None)
    return " ".join(f"{k}={v}" for k, v in d.items())


def _columns(g, params: str = "{}") -> list[str]:
    present = set(g.metric)
    if present.intersection(OUTCOMES):
        return [m for m in OUTCOMES if m in present]
    # a job file's job: what it declares answers it (read and write IOPS, fsync p99, ...)
    answer = (job_answer(params, set(g[g.better.notna()].metric))
              or [m for m in ANSWERS if m in present][:1])
    through = [m for m in THROUGHPUT if m in present]
    if through and not answer:
        return through
    directional = g[g.better.notna()].metric.unique().tolist()
    return list(dict.fromkeys(answer + through + directional))[:MAX_METRICS]


def print_run_summary(store, run_id: str, console: Console) -> None:
    df = store.records(run_id)
    units = store.units(run_id)
    failed = [u for u in units if u["status"] == "failed"]
    if df.empty:
        console.print("no measurements stored" + (f"; {len(failed)} units failed" if failed else ""))
    for (suite, case, params), g in df.groupby(["suite", "case", "params"], sort=True):
        metrics = _columns(g, params)
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
