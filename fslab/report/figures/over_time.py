"""IOPS and completion latency over time, for runs whose fio jobs log them (a job file's
write_iops_log= / write_lat_log=, kept by fslab in each unit's logs/ folder): one line per
filesystem and round, per direction, so a stall, a writeback burst or a slow start shows.

fio's log lines are "msec, value, direction (0 read, 1 write, 2 trim), bs, offset": IOPS
per window and latency in ns averaged per window with log_avg_msec=, else one line per I/O
(then counted, or averaged, in at most BUCKETS windows here). A job's clones (numjobs)
log to NAME.1, NAME.2, ...: their IOPS add up, their latencies are averaged.
Not a suite figure: html.py calls `figure` for each workload.
"""
from __future__ import annotations

import glob
import math
from collections import defaultdict
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd

from fslab.report.figures.latency_cdf import _entries, _job_of
from fslab.metrics.format import axis_scale
from fslab.report.svg import colors
from fslab.report.svgplot import Grid, nice_ticks
from fslab.fio.parse import load_fio_output

PLACE = "workload"
BUCKETS = 200        # time windows per line at most
MAX_UNITS = 60       # units read per workload at most
DIRECTIONS = {0: "read", 1: "write", 2: "trim"}
KINDS = (("iops", "write_iops_log", "IOPS"), ("clat", "write_lat_log", "completion latency"))
ANCHORS = ("read_iops", "write_iops", "trim_iops")   # a job's own rows (each unit's artifact)
CAPTION = ("From the job's own fio logs (write_iops_log=, write_lat_log=): one line per "
           "filesystem and round; time from the job's start.")


def figure(data: pd.DataFrame, levels: list[str], results_root: Path | None) -> str | None:
    if results_root is None or "artifact" not in data:
        return None
    units = data[data["metric"].isin(ANCHORS) & data["artifact"].notna()]   # a job's own rows
    units = units.drop_duplicates(["level", "iteration", "artifact", "params"])
    lines: dict[tuple[str, str], list[tuple[str, np.ndarray, np.ndarray]]] = defaultdict(list)
    for r in units.head(MAX_UNITS).itertuples(index=False):
        fio_json = results_root / r.artifact
        logs = fio_json.parent / "logs"
        if not logs.is_dir():
            continue
        options = _job_options(str(fio_json), _job_of(r.params))
        if options is None:
            continue
        averaged = str(options.get("log_avg_msec", "0")).strip() not in ("", "0")
        for kind, key, _ in KINDS:
            if key not in options:
                continue
            prefix = PurePosixPath(options[key] or options.get("name", "")).name
            for direction, (t, v) in _series(logs, prefix, kind, averaged).items():
                lines[(kind, direction)].append((r.level, t, v))
    if not lines:
        return None
    palette = colors(levels)
    panels = sorted(lines.items(), key=lambda kv: ([k for k, _, _ in KINDS].index(kv[0][0]), kv[0][1]))
    grid = Grid(len(panels), 2, width=3.8, height=2.6)
    for ax, ((kind, direction), series) in zip(grid.panels, panels):
        values = np.concatenate([v for _, _, v in series])
        unit = "ops/s" if kind == "iops" else "ns"
        scale, label = axis_scale(values, unit)
        end = max(float(t.max()) for _, t, _ in series)
        ax.limits((0.0, end * 1.02 or 1.0), list(values / scale), zero=kind == "iops")
        for level, t, v in series:
            ax.polyline(t, v / scale, palette.get(level, "black"), 1.0, 0.8)
        ticks = [x for x in _ticks(end)]
        ax.axes(ticks, [f"{x:g}" for x in ticks])
        title = dict((k, t) for k, _, t in KINDS)[kind]
        ax.labels(f"{direction} {title} over time", label)
        ax.text(ax.left + ax.w / 2, ax.top + ax.h + 28, "time (s)", 7)
        ax.legend([(lv, palette[lv]) for lv in levels if any(lv == x for x, _, _ in series)])
    return grid.svg()


def _ticks(end: float) -> list[float]:
    return [t for t in nice_ticks(0.0, end) if t >= 0]


def _job_options(path: str, job: str | None) -> dict | None:
    """The job's options as fio reports them (global ones under its own), with its name."""
    entries = _entries(path)
    if not entries:
        return None
    found = next(((label, e) for label, e in entries if label == job), None) if job else \
        (entries[0] if len(entries) == 1 else None)
    if found is None:
        return None
    try:
        doc = load_fio_output(Path(path).read_bytes(), path)
    except Exception:
        return None
    label, entry = found
    return {**(doc.get("global options") or {}), **(entry.get("job options") or {}),
            "name": str(entry.get("jobname", label))}


def _series(logs: Path, prefix: str, kind: str, averaged: bool) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """direction -> (time s, value) of one unit's logs of this kind (all clones)."""
    files = sorted(glob.glob(str(logs / f"{glob.escape(prefix)}_{kind}.*.log")))
    if not files:
        return {}
    rows = []
    for clone, f in enumerate(files):
        try:
            a = np.loadtxt(f, delimiter=",", usecols=(0, 1, 2), ndmin=2)
        except (OSError, ValueError):
            continue
        if a.size:
            rows.append(np.column_stack([a, np.full(len(a), clone)]))
    if not rows:
        return {}
    a = np.concatenate(rows)
    out = {}
    for code, name in DIRECTIONS.items():
        d = a[a[:, 2] == code]
        if len(d) < 2:
            continue
        t = d[:, 0] / 1000.0
        end = float(t.max())
        width = max(end / BUCKETS, 0.001)
        if averaged and len(np.unique(t)) <= BUCKETS * len(files):
            # windows as fio averaged them: IOPS add over clones, latency averages
            frame = pd.DataFrame({"t": np.round(t, 3), "v": d[:, 1]})
            g = frame.groupby("t")["v"]
            s = g.sum() if kind == "iops" else g.mean()
        else:
            bucket = np.floor(t / width) * width + width / 2
            frame = pd.DataFrame({"t": bucket, "v": d[:, 1]})
            g = frame.groupby("t")["v"]
            s = (g.count() / width) if kind == "iops" else g.mean()
        if len(s) >= 2 and math.isfinite(float(s.max())):
            out[name] = (s.index.to_numpy(dtype=float), s.to_numpy(dtype=float))
    return out
