"""Reading pgbench's output: its summary (stdout) and its per-transaction log (-l)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fslab.errors import StepFailed


@dataclass(frozen=True)
class PgbenchSummary:
    tps: float                  # "tps = N (without initial connection time)"
    transactions: int
    failed: int
    latency_mean_ms: float | None


def parse_summary(text: str) -> PgbenchSummary:
    def field(pattern: str, cast=float, required: bool = True):
        m = re.search(pattern, text, re.M)
        if m is None:
            if required:
                raise StepFailed(f"pgbench printed no {pattern.split(':')[0].split('=')[0].strip()!r}"
                                 " line (output not recognised)")
            return None
        return cast(m.group(1))
    return PgbenchSummary(
        tps=field(r"^tps = ([0-9.]+)"),
        transactions=field(r"^number of transactions actually processed: (\d+)", int),
        failed=field(r"^number of failed transactions: (\d+)", int, required=False) or 0,
        latency_mean_ms=field(r"^latency average = ([0-9.]+) ms", required=False))


@dataclass(frozen=True)
class Latencies:
    count: int
    mean_s: float
    p50_s: float
    p99_s: float
    max_s: float


def transaction_latencies(logs: list[Path]) -> Latencies:
    """Percentiles of every transaction's latency, from pgbench's per-transaction logs
    (one per thread: client, transaction, latency in µs, script, epoch s, µs); a failed
    or skipped transaction (its latency field 'failed' or 'skipped') is left out."""
    values: list[np.ndarray] = []
    for log in logs:
        col = []
        with open(log) as f:
            for line in f:
                parts = line.split(None, 3)
                if len(parts) >= 3 and parts[2].isdigit():
                    col.append(int(parts[2]))
        values.append(np.asarray(col, dtype=float))
    us = np.concatenate(values) if values else np.empty(0)
    if us.size == 0:
        raise StepFailed("pgbench's per-transaction log holds no transaction")
    s = us / 1e6
    return Latencies(int(s.size), float(s.mean()), float(np.percentile(s, 50)),
                     float(np.percentile(s, 99)), float(s.max()))
