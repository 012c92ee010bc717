"""Each filesystem's fio throughput as % of the bare device's (`raw` level, `--baseline raw`).

The raw driver runs the same fio job on the block device with no filesystem, so
the ratio is the share of the device's throughput a filesystem keeps for that
job. Medians over iterations, read + write combined per iteration (the same
rule as S0's efficiency figure in the HTML report, which this module reuses).
Shown only when the run has a raw level.
"""
from __future__ import annotations

import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fslab.records import level_label
from fslab.report.figures.s0_onboard import RAW, efficiency, per_iteration
from fslab.report.tables import workload_label


def _levelled(records: pd.DataFrame) -> pd.DataFrame:
    """fio records with a `level` (fs, or fs:variant) like the analysis gives them."""
    fio = records[records["suite"] == "fio"].copy()
    if fio.empty:
        return fio
    fio["level"] = [level_label(fs, v) for fs, v in zip(fio["fs"], fio["variant"])]
    return fio


def percent_of_raw(data: pd.DataFrame) -> pd.DataFrame:
    """Rows (workload, level, pct_of_raw, throughput, raw_throughput); empty without raw."""
    if data.empty or "level" not in data or not (data["level"] == RAW).any():
        return pd.DataFrame()
    m = efficiency(per_iteration(data[data["suite"] == "fio"]))
    if m.empty:
        return m
    m["workload"] = [workload_label({"suite": s, "case": c, "params": p})
                     for s, c, p in zip(m["suite"], m["case"], m["params"])]
    return m[["workload", "level", "pct_of_raw", "throughput", "raw_throughput"]]


def print_baseline(data: pd.DataFrame, console: Console) -> None:
    """A terminal table: workload rows, filesystem columns, % of the raw device."""
    m = percent_of_raw(data)
    if m.empty:
        return
    levels = list(dict.fromkeys(m["level"]))
    console.print("[bold]fio throughput as % of the raw device's[/] (same job, medians)")
    t = Table()
    t.add_column("workload")
    for lv in levels:
        t.add_column(escape(str(lv)), justify="right")
    for wl, g in m.groupby("workload", sort=True):
        pct = dict(zip(g["level"], g["pct_of_raw"]))
        t.add_row(escape(wl), *[("—" if pd.isna(pct.get(lv)) else f"{pct[lv]:.0f}%")
                                for lv in levels])
    console.print(t)


def baseline_json(run: dict | None, records: pd.DataFrame) -> dict | None:
    """The report --json "baseline" key: {"baseline": "raw", "rows": [...]}, or None."""
    m = percent_of_raw(_levelled(records))
    if m.empty:
        return None
    rows = [{"workload": r["workload"], "fs": r["level"],
             "percent_of_raw": None if pd.isna(r["pct_of_raw"]) else float(r["pct_of_raw"]),
             "throughput": float(r["throughput"]), "raw_throughput": float(r["raw_throughput"])}
            for r in m.to_dict("records")]
    return {"baseline": RAW, "rows": rows}
