"""What a recommendation may score, and which metrics are one measure counted once.

Several metrics of one job restate the same measurement: fio's bandwidth is its IOPS
times the block size, and in one job reads and writes follow the job's mix; `lat` is
`clat` plus a submission time of nanoseconds; space consumed, overhead and its share
differ by the (equal) logical size; a task's elapsed time and the sync after it are the
two parts of its time until the data is on disk. Counting each of them as a separate verdict would
let one job vote several times, so a recommendation groups a job's metrics by the
measure they state and gives each (job, measure, pair of filesystems) one vote.

CPU is scored only as operations per CPU-second (system-wide, so work a filesystem
daemon does on its behalf is included): a CPU share or CPU time of a fixed-time job
penalises the filesystem that did more work in that time, and a benchmark process's
own CPU misses the daemon's.
Parts that add up are scored as their sum, measured per round (`derived_sums`): a
filesystem that returns from `cp` early and pays at `sync` must not win one vote for
each half.
"""
from __future__ import annotations

from functools import lru_cache

import orjson
import pandas as pd

from fslab import metrics

# a derived metric -> the metrics it sums, per unit and case, when all were recorded
SUMS = {"elapsed_with_writeback": ("elapsed", "writeback")}
_UNIT = ["run_id", "host", "fs", "variant", "suite", "case", "params", "iteration"]

CPU_MEASURE = "ops_per_cpu_second"

# A job file's job is named after its file, not after what it does: a criterion's case
# pattern ("rand*", "seq*", "mixed") also meets it by the rw= it declares (in its record
# params: fslab.fio.parse.declared_io), in the built-in workloads' words.
_RW_CASE = {"read": "seqread", "write": "seqwrite", "rw": "seqrw", "readwrite": "seqrw",
            "trim": "seqtrim", "trimwrite": "seqtrimwrite",
            "randread": "randread", "randwrite": "randwrite", "randrw": "randrw",
            "randtrim": "randtrim", "randtrimwrite": "randtrimwrite"}


@lru_cache(maxsize=4096)   # asked for every summary row by every criterion
def case_names(case: str, params: str | None) -> tuple[str, ...]:
    """The names a criterion's case pattern is matched against: the case, and for a job
    file's job its declared pattern ('randrw' for rw=randrw, 'seqwrite' for rw=write) and
    'mixed' when it both reads and writes."""
    try:
        p = orjson.loads(params or "{}")
    except orjson.JSONDecodeError:
        return (case,)
    if not isinstance(p, dict) or "job" not in p or p.get("rw") not in _RW_CASE:
        return (case,)
    names = [case, _RW_CASE[p["rw"]]]
    if isinstance(p.get("rwmixread"), (int, float)) and 0 < p["rwmixread"] < 100:
        names.append("mixed")
    return tuple(names)


def measure_of(metric: str) -> str:
    """The measure a metric states ('read_iops' and 'write_bw' -> 'throughput'): the
    catalogue's quantity (fslab/metrics/declared.py)."""
    return metrics.quantity(metric)


def scored(metric: str) -> bool:
    """False for a metric the catalogue declares unranked (CPU other than operations per
    CPU-second, see the module doc; fio's own memory): stores written before those got
    better=None still say 'lower' for them."""
    return metrics.role(metric) != "unranked"


def derived_sums(records: pd.DataFrame) -> pd.DataFrame:
    """The SUMS as records (same unit and case as their parts; first part's unit and artifact)."""
    out = [records.iloc[0:0]]
    for name, parts in SUMS.items():
        rows = records[records["metric"].isin(parts)]
        if rows.empty:
            continue
        wide = rows.pivot_table(index=_UNIT, columns="metric", values="value", aggfunc="first")
        if not set(parts) <= set(wide.columns):
            continue
        total = wide[list(parts)].sum(axis=1, min_count=len(parts)).dropna()
        first = rows[rows["metric"] == parts[0]].drop_duplicates(_UNIT).set_index(_UNIT)
        derived = first.loc[total.index].copy()
        derived["value"], derived["metric"] = total, name
        out.append(derived.reset_index()[records.columns])
    return pd.concat(out, ignore_index=True)
