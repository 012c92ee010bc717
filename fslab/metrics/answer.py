"""Which metric answers a workload: the answer line, the run summary and decide ask here.

The candidates, first present wins: the metric of the workload's question (declared with an
`answer_rank` below RATES: integrity's silent corruption, space per small file, large-file
time, dedup's space saving, what fitted before ENOSPC, aging's slow-down), then fio's read
and write rates by the access pattern (bandwidth first for a sequential case, else IOPS;
writes before reads), then a time (ranks from TIMES on), then what is left (available space,
mean latency of a job too short to time), else the alphabetically first ranked metric that
is not fio's own (role unranked).

A user's job-file job says what it does (fslab.fio.parse.declared_io, in its record params):
its answer is the rate of each direction that is a real share of its I/O (IOPS when random
or syncing: a sync bounds operations, not bytes; bandwidth when sequential), then the p99 of
its fsyncs/fdatasyncs when it syncs (what a database's commit waits for), else of its
larger direction.
"""
from __future__ import annotations

from typing import Iterable

import orjson

from fslab.metrics.declared import directions_of
from fslab.metrics.lookup import find, of

RATES = 10        # the rank of fio's rates among the candidates (by the case's pattern)
TIMES = 20        # ranks from here on: a time answers where no question or rate does
REAL_SHARE = 10   # % of a read/write mix below which a direction is incidental to the job


def answer_metric(suite: str | None, case: str, metrics_present: Iterable[str]) -> str | None:
    """The metric that answers a workload of `suite` and `case` among those it recorded
    (None when it recorded none that could)."""
    present = set(metrics_present)
    ranked = [(r, m) for m in present if (r := _rank(suite, case, m)) is not None]
    if ranked:
        return min(ranked)[1]
    rest = sorted(m for m in present if (f := find(m, suite)) is None or f.kind != "unranked")
    return rest[0] if rest else None


def _rank(suite: str | None, case: str, metric: str) -> float | None:
    m = find(metric, suite)
    if m is None:
        return None
    if m.kind == "throughput":
        seq = "seq" in case.lower()
        other_kind = (m.unit == "B/s") != seq      # IOPS for a random case, else bandwidth
        return RATES + 0.5 * other_kind + 0.25 * (not metric.startswith("write"))
    return m.answer_rank


def question_metrics(suite: str | None, metrics_present: Iterable[str]) -> list[str]:
    """The metrics among these that are a workload's question (rank below the rates)."""
    ranks = {m: f.answer_rank for m in set(metrics_present)
             if (f := find(m, suite)) is not None and f.answer_rank is not None
             and f.answer_rank < RATES}
    return sorted(ranks, key=ranks.__getitem__)


def throughput_metrics(suite: str | None = "fio") -> tuple[str, ...]:
    """fio's read and write rates, IOPS first: what a table of rates shows."""
    return of(suite).names("throughput")


def answer_metrics(suite: str | None, case: str, params: str | dict | None,
                   metrics_present: Iterable[str]) -> list[str]:
    """The metrics that answer a workload: what a job file's job declares, else the answer
    metric and, for a rate, the p99 latency of its direction."""
    present = set(metrics_present)
    declared = job_answer(params, present)
    if declared:
        return declared
    main = answer_metric(suite, case, present)
    out = [main] if main else []
    declared_main = find(main, suite) if main else None
    companion = declared_main.answer_with if declared_main is not None else None
    if companion and companion in present:
        out.append(companion)
    elif main and main.split("_")[0] in ("read", "write"):
        lat = f"{main.split('_')[0]}_clat_p99"
        if lat in present:
            out.append(lat)
    return out


def job_answer(params: str | dict | None, metrics_present: Iterable[str]) -> list[str]:
    """The answer of a job file's job from what it declares (its params hold "job" and
    "rw"); [] for any other workload, or when none of those metrics was recorded."""
    if isinstance(params, str):
        try:
            params = orjson.loads(params or "{}")
        except orjson.JSONDecodeError:
            return []
    if not (isinstance(params, dict) and "job" in params and "rw" in params):
        return []
    return _declared_metrics(params, set(metrics_present))


def _declared_metrics(declared: dict, metrics: set[str]) -> list[str]:
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
