"""Completion-latency distributions as storage engineers read them: from fio's json+
histogram bins (fslab runs fio with --output-format=json+; the bins are in each unit's
fio JSON artifact), one line per filesystem and round, latency on a log axis, the
percentile on an axis that stretches the tail (p90, p99, p99.9 equally spaced).

Not a suite figure: html.py calls `figure` for each workload, beside its verdicts.
A job's clones (numjobs) are merged as fslab.fio.clones merges them for the records.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np
import orjson
import pandas as pd

from fslab.metrics.format import axis_scale
from fslab.report.svg import colors
from fslab.report.svgplot import Grid
from fslab.fio.clones import merge_clones
from fslab.fio.parse import FioParseError, load_fio_output

PLACE = "workload"
MAX_ROUNDS = 10          # lines per filesystem at most: more are unreadable (and each is a file read)
# the metric whose records point at the artifact holding a direction's bins
ANCHORS = {"read": "read_clat_p99", "write": "write_clat_p99", "trim": "trim_clat_p99",
           "sync": "sync_lat_p99"}
TITLE = {"read": "read completion latency", "write": "write completion latency",
         "trim": "trim completion latency", "sync": "fsync/fdatasync latency"}
CAPTION = ("Latency distributions from fio's json+ histogram bins: one line per filesystem "
           f"and round (the first {MAX_ROUNDS} rounds); the vertical axis is the percentile, stretched so that p90, p99 and "
           "p99.9 are equally spaced (a line ends at the largest latency its round saw).")


def figure(data: pd.DataFrame, levels: list[str], results_root: Path | None) -> str | None:
    """One panel per direction this workload's fio jobs did, or None without bins."""
    if results_root is None or "artifact" not in data:
        return None
    curves: dict[str, list[tuple[str, np.ndarray, np.ndarray]]] = {}
    for direction, metric in ANCHORS.items():
        rows = data[(data["metric"] == metric) & data["artifact"].notna()]
        rows = rows.sort_values("iteration").groupby("level", sort=False).head(MAX_ROUNDS)
        for r in rows.itertuples(index=False):
            bins = job_bins(str(results_root / r.artifact), _job_of(r.params), direction)
            if bins:
                v, n = zip(*sorted(bins.items()))
                curves.setdefault(direction, []).append(
                    (r.level, np.asarray(v, dtype=float), np.cumsum(n) / float(sum(n))))
    if not curves:
        return None
    palette = colors(levels)
    grid = Grid(len(curves), 3, width=3.6, height=2.8)
    for ax, (direction, lines) in zip(grid.panels, curves.items()):
        everything = np.concatenate([v for _, v, _ in lines])
        scale, unit = axis_scale(everything, "ns")
        lo, hi = math.log10(everything.min() / scale), math.log10(everything.max() / scale)
        pad = (hi - lo) * 0.04 or 0.1
        tail = min(4, max(1, math.ceil(max(_stretch(f[-2]) if len(f) > 1 else 1.0
                                           for _, _, f in lines))))
        ax.limits((lo - pad, hi + pad), [0.0, float(tail)], xlog=True)
        ax.ylim = (0.0, float(tail) * 1.04)
        for level, values, f in lines:
            # the last bin holds F = 1 (unbounded on this axis): the line ends at the one before
            y = np.array([_stretch(x) for x in f[:-1]] + [_stretch(f[-2]) if len(f) > 1 else 0.0])
            y = np.minimum(y, float(tail))     # beyond p99.99 the axis ends
            ax.polyline(values / scale, y, palette.get(level, "black"), 1.0, 0.8)
        ticks = [10 ** k for k in range(math.floor(lo - pad), math.ceil(hi + pad) + 1)
                 if lo - pad <= k <= hi + pad]
        ax.axes(ticks, [f"{t:g}" for t in ticks],
                yticks=[(k, "p0" if k == 0 else "p" + f"{100 - 100 / 10 ** k:g}")
                        for k in range(0, tail + 1)])
        ax.labels(TITLE[direction], "percentile")
        ax.text(ax.left + ax.w / 2, ax.top + ax.h + 28, f"latency ({unit}, log scale)", 7)
        # a CDF rises from the lower left: its lower right corner is empty
        ax.legend([(lv, palette[lv]) for lv in levels if any(lv == x for x, _, _ in lines)],
                  bottom=True)
    return grid.svg()


def _stretch(fraction: float) -> float:
    """-log10(1 - F): 0 at p0, 1 at p90, 2 at p99, 3 at p99.9."""
    return -math.log10(max(1.0 - fraction, 1e-12))


def _job_of(params: str | None) -> str | None:
    try:
        p = orjson.loads(params or "{}")
    except (orjson.JSONDecodeError, TypeError):
        return None
    return p.get("job") if isinstance(p, dict) else None


@functools.lru_cache(maxsize=64)
def _entries(path: str) -> list[tuple[str, dict]] | None:
    """(label, merged job entry) per job of a fio JSON artifact, labelled as the records'
    `job` param is (fslab.workloads.fio.job_labels); None for unreadable or client/server
    output (its entries are per host)."""
    try:
        doc = load_fio_output(Path(path).read_bytes(), path)
    except (OSError, FioParseError):
        return None
    if not isinstance(doc.get("jobs"), list):
        return None
    merged = merge_clones(doc["jobs"])
    names = [str(e.get("jobname", "?")).strip() for e in merged]
    counts = {n: names.count(n) for n in names}
    seen: dict[str, int] = {}
    out = []
    for n, e in zip(names, merged):
        if counts[n] > 1:
            out.append((f"{n}.{seen.get(n, 0)}", e))
            seen[n] = seen.get(n, 0) + 1
        else:
            out.append((n, e))
    return out


def job_bins(path: str, job: str | None, direction: str) -> dict[int, int]:
    """{latency ns: count} of one job's direction ({} when fio wrote no bins)."""
    entries = _entries(path)
    if not entries:
        return {}
    entry = next((e for label, e in entries if label == job), None) if job else \
        (entries[0][1] if len(entries) == 1 else None)
    if entry is None:
        return {}
    stats = (entry.get(direction) or {}).get("lat_ns" if direction == "sync" else "clat_ns") or {}
    bins = stats.get("bins")
    if not isinstance(bins, dict):
        return {}
    return {int(k): int(n) for k, n in bins.items() if int(n) > 0}
