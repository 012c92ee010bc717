"""Units whose machine was saturated: an application's unit that kept every CPU busy
measured the CPU (its own client and server, the kernel, or others on a shared machine),
not the filesystem. pgbench at scale 20 ran every unit at 92-99% system-wide CPU, and
ext4's third round fell to 1,146 tps with the load at 8.6 on 2 CPUs; the answer said
nothing of it. Flagged beside the answer's numbers, as memory-served rows are."""
from __future__ import annotations

import pandas as pd

from fslab.metrics.apps import APP_SUITES

BUSY_PERCENT = 90.0   # system-wide CPU busy over the counted region: saturated
LOAD = "load_per_cpu"


def cpu_bound(records: pd.DataFrame) -> dict[tuple, dict[str, dict]]:
    """(suite, case, params) -> {fs: {"rounds", "of", "busy_max", "load_max"}} for the
    application suites' units at or above BUSY_PERCENT system-wide CPU."""
    if records.empty or "metric" not in records:
        return {}
    r = records[records["suite"].isin(list(APP_SUITES))
                & records["metric"].isin(["cpu_busy_system_wide", LOAD])]
    if r.empty:
        return {}
    unit = ["suite", "case", "params", "fs", "variant", "run_id", "iteration"]
    wide = r.pivot_table(index=unit, columns="metric", values="value", aggfunc="max")
    if "cpu_busy_system_wide" not in wide:
        return {}
    out: dict[tuple, dict[str, dict]] = {}
    for (suite, case, params, fs), g in wide.groupby(level=[0, 1, 2, 3], dropna=False):
        busy = g["cpu_busy_system_wide"]
        bound = busy >= BUSY_PERCENT
        if not bound.any():
            continue
        load = g[LOAD][bound] if LOAD in g else pd.Series(dtype=float)
        out.setdefault((suite, case, params), {})[fs] = {
            "rounds": int(bound.sum()), "of": int(busy.notna().sum()),
            "busy_max": float(busy.max()),
            "load_max": float(load.max()) if load.notna().any() else None}
    return out


def cpu_text(flags: dict[str, dict]) -> str:
    """'CPU-bound: ext4 3 of 3 rounds (up to 99% of every CPU, load 4.3 per CPU): ...'."""
    parts = []
    for fs, f in sorted(flags.items()):
        load = f", load {f['load_max']:.1f} per CPU" if f.get("load_max") is not None else ""
        parts.append(f"{fs} {f['rounds']} of {f['of']} round{'' if f['of'] == 1 else 's'} "
                     f"(up to {f['busy_max']:.0f}% of every CPU busy{load})")
    return ("CPU-bound: " + ", ".join(parts) + ": the CPU (the program, the kernel, or other "
            "work on the machine) was what these units measured, not the filesystem")
