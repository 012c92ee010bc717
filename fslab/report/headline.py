"""The answer first: one line per workload (its main metric in tiers, plus p99 latency),
with a warning where the device saw only a fraction of the bytes (served from memory)."""
from __future__ import annotations

import math

import orjson
import pandas as pd

from fslab.analysis import Analysis
from fslab.analysis.groups import FS_FACTOR
from fslab.report.tables import workload_label
from fslab.report.verdicts import LETTERS_NOTE, ranking_line

MEMORY_SHARE = 0.5   # below this share of fio's bytes on the device, a row is memory


# The question a workload answers, by the metric that answers it, where its records carry
# more than one candidate: corruption that passed unnoticed (not collateral damage), space
# per small file and large-file creation time (not the space saving both also record),
# dedup's space saving (not its read phase's IOPS), how much fitted before ENOSPC (not the
# checker's verdict), aging's slow-down (not its failed steps).
ANSWERS = ("silent", "space_overhead_per_file", "total_time", "space_saving_ratio",
           "filled_bytes", "aging_factor")
TIMES = ("elapsed_with_writeback", "elapsed", "time", "seconds", "pull_seconds_total")


# A user's job-file job says what it does (fslab.fio.parse.declared_io, in its record params):
# its answer is the rate of each direction that is a real share of its I/O (IOPS when random
# or syncing: a sync bounds operations, not bytes; bandwidth when sequential), then the p99 of
# its fsyncs/fdatasyncs when it syncs (what a database's commit waits for), else of its
# larger direction.
REAL_SHARE = 10   # % of a read/write mix below which a direction is incidental to the job


def answer_metrics(case: str, params: str | dict | None, metrics: set[str]) -> list[str]:
    """The metrics that answer a workload: what a job file's job declares, else by case."""
    return job_answer(params, metrics) or _main_metrics(case, metrics)


def job_answer(params: str | dict | None, metrics: set[str]) -> list[str]:
    """The answer of a job file's job from what it declares (its params hold "job" and
    "rw"); [] for any other workload, or when none of those metrics was ranked."""
    if isinstance(params, str):
        try:
            params = orjson.loads(params or "{}")
        except orjson.JSONDecodeError:
            return []
    if not (isinstance(params, dict) and "job" in params and "rw" in params):
        return []
    return _declared_metrics(params, metrics)


def _declared_metrics(declared: dict, metrics: set[str]) -> list[str]:
    from fslab.fio.parse import directions_of
    rw = str(declared["rw"])
    read_share = declared.get("rwmixread")
    share = ({"read": float(read_share), "write": 100 - float(read_share)}
             if isinstance(read_share, (int, float)) else {})
    dirs = [d for d in ("read", "write", "trim")
            if d in directions_of(rw) and share.get(d, 100) >= REAL_SHARE]
    syncs = bool(declared.get("fsync") or declared.get("fdatasync"))
    rate = "iops" if rw.startswith("rand") or syncs else "bw"
    out = [f"{d}_{rate}" for d in dirs if f"{d}_{rate}" in metrics]
    lat = ["sync_lat_p99", "sync_lat_mean"] if syncs else []
    for d in sorted(dirs, key=lambda d: -share.get(d, 100)):
        lat += [f"{d}_clat_p99", f"{d}_clat_mean"]
    out += [m for m in lat if m in metrics][:1]
    return out


def _main_metrics(case: str, metrics: set[str]) -> list[str]:
    """The metric that answers the workload (throughput, time, or what ANSWERS names),
    then its p99 latency."""
    seq = "seq" in case.lower()
    prefs = (["write_bw", "read_bw", "write_iops", "read_iops"] if seq else
             ["write_iops", "read_iops", "write_bw", "read_bw"])
    # a job too short to time (fio/parse.py SHORT_RUN_MS) has no ranked rate: its latency
    main = next((m for m in (*ANSWERS, *prefs, *TIMES, "available_bytes", "write_clat_mean",
                             "read_clat_mean") if m in metrics), None)
    if main is None:
        # fio's own memory use answers nothing about a filesystem (a job file's
        # workload-level row holds only it and the device counters)
        main = next(iter(sorted(metrics - {"fio_max_rss"})), None)
    out = [main] if main else []
    if main and main.split("_")[0] in ("read", "write"):
        lat = f"{main.split('_')[0]}_clat_p99"
        if lat in metrics:
            out.append(lat)
    return out


def memory_bound(records: pd.DataFrame) -> dict[tuple, dict]:
    """(suite, case, params) -> {fs: share} for units whose device saw < half of fio's
    bytes (device_read_share for reads, write_amplification for writes)."""
    if records.empty or "metric" not in records:
        return {}
    r = records[records["metric"].isin(["device_read_share", "write_amplification"])]
    if r.empty:
        return {}
    med = r.groupby(["suite", "case", "params", "fs", "metric"], dropna=False)["value"].median()
    out: dict[tuple, dict] = {}
    for (suite, case, params, fs, metric), share in med.items():
        if share < MEMORY_SHARE:
            d = out.setdefault((suite, case, params), {})
            d[fs] = min(share, d.get(fs, math.inf))
    return out


# a space, share or count answer is read after a commit: memory serving the unit's I/O
# (dedup's read phase, a syncfs zfs-fuse ignores) does not make it a memory number
NOT_SPEEDS = {"B", "%", "ratio", "count", "bool", "code"}


def memory_applies(unit: str) -> bool:
    return unit not in NOT_SPEEDS


def memory_text(shares: dict) -> str:
    return "served from memory: " + ", ".join(
        f"{fs} (device saw {share:.0%} of the bytes)" for fs, share in sorted(shares.items()))


def headline(a: Analysis, records: pd.DataFrame | None = None) -> list[dict]:
    """One entry per workload: the tier sentence of its main metric (and p99 latency)."""
    if a.tiers.empty or tuple(a.factor) != tuple(FS_FACTOR):
        return []
    mem = memory_bound(records) if records is not None else {}
    wkeys = [k for k in a.keys if k not in ("metric", "unit")]
    groups = [(dict(zip(wkeys, wkey if isinstance(wkey, tuple) else (wkey,))), g)
              for wkey, g in a.tiers.groupby(wkeys, sort=True, dropna=False)]
    last = _last_steps([ident for ident, _ in groups])
    out = []
    for ident, g in groups:
        if not last(ident):
            continue
        wanted = answer_metrics(str(ident.get("case", "")), ident.get("params"), set(g["metric"]))
        if not wanted:
            continue
        lines = [g[g["metric"] == m].iloc[0] for m in wanted]
        memo = mem.get((ident.get("suite"), ident.get("case"), ident.get("params"))) \
            if any(memory_applies(r["unit"]) for r in lines) else None
        out.append({"workload": workload_label({**ident, "metric": "", "unit": ""}),
                    "metrics": [r["metric"] for r in lines],
                    "rankings": [r.to_dict() for r in lines],
                    "lines": [ranking_line(r) for r in lines],
                    "memory_bound": ({"shares": memo, "why": memory_text(memo)} if memo else None)})
    return out


def _series(ident: dict) -> tuple[tuple, float | None]:
    """(the workload without its step, the step) for a workload measured in steps (aging)."""
    try:
        params = orjson.loads(ident.get("params") or "{}")
    except orjson.JSONDecodeError:
        params = {}
    step = params.pop("step", None) if isinstance(params, dict) else None
    rest = orjson.dumps(params, option=orjson.OPT_SORT_KEYS) if isinstance(params, dict) else b""
    key = tuple(sorted((k, str(v)) for k, v in ident.items() if k != "params")) + (rest,)
    return key, (float(step) if isinstance(step, (int, float)) else None)


def _last_steps(idents: list[dict]):
    """A test for the workloads the answer shows: of a series of steps (aging after 0, 25, ...
    pulls), only the last: the earlier steps are the way there, in the details."""
    final: dict[tuple, float] = {}
    for ident in idents:
        key, step = _series(ident)
        if step is not None:
            final[key] = max(step, final.get(key, step))

    def shown(ident: dict) -> bool:
        key, step = _series(ident)
        return step is None or step == final[key]
    return shown


def headline_text(entries: list[dict]) -> list[str]:
    """Plain lines: 'randwrite — write IOPS: xfs ≈ ext4 ≫ btrfs (0.05×); p99 ...'. A reason
    for '~' that repeats (n too small for any test) is said once, as a numbered note, and so
    is what letters mean when a ranking needs them."""
    counts: dict[str, int] = {}
    for e in entries:
        for t in e["rankings"]:
            if t["why"]:
                counts[t["why"]] = counts.get(t["why"], 0) + 1
    notes: list[str] = []

    def note(text: str) -> str:
        if text not in notes:
            notes.append(text)
        return f"[{notes.index(text) + 1}]"
    lines = []
    for e in entries:
        said = []
        for t in e["rankings"]:
            said.append(ranking_line(t, note(t["why"]) if counts.get(t["why"], 0) > 1 else None))
            if t["display"] == "letters":
                said[-1] += f" {note(LETTERS_NOTE)}"
        text = f"{e['workload']} — " + "; ".join(said)
        if e["memory_bound"]:
            text += f"  ⚠ {e['memory_bound']['why']}"
        lines.append(text)
    return lines + [f"[{i}] {why}" for i, why in enumerate(notes, 1)]
