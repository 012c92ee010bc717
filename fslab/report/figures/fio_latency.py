"""fio: latency percentiles (p50, p99, p99.9) per workload, job and direction, and level:
reads' and writes' completion latency, and a syncing job's fsync/fdatasync latency."""
from __future__ import annotations

import re

import numpy as np
import orjson

from fslab.report.figures import FigureContext, Section
from fslab.metrics.format import axis_scale
from fslab.report.svg import colors
from fslab.report.svgplot import Grid

SUITES = ("fio",)
_PCT = re.compile(r"^(read|write|trim)_clat_(p[\d.]+)$|^(sync)_lat_(p[\d.]+)$")


def sections(ctx: FigureContext) -> list[Section]:
    s = ctx.summary[ctx.summary["metric"].str.match(_PCT)]
    if s.empty:
        return []
    s = s.assign(direction=s["metric"].str.replace(_PCT, r"\1\3", regex=True),
                 pct=s["metric"].str.replace(_PCT, r"\2\4", regex=True))
    where = [k for k in ctx.analysis.keys if k not in ("metric", "unit", "suite")]
    panels = list(s.groupby(where + ["direction"], sort=True, dropna=False))
    if not panels:
        return []
    palette = colors(ctx.analysis.levels)
    grid = Grid(len(panels), 4, width=2.8)
    for ax, (key, g) in zip(grid.panels, panels):
        pcts = sorted(g["pct"].unique(), key=lambda p: float(p[1:]))
        levels = [lv for lv in ctx.analysis.levels if lv in set(g["level"])]
        scale, label = axis_scale(g["median"], "ns")
        width = 0.8 / max(1, len(levels))
        med = g.groupby(["level", "pct"])["median"].mean() / scale
        bars = [(i, j, med.get((lv, p), np.nan)) for i, lv in enumerate(levels)
                for j, p in enumerate(pcts)]
        ax.limits((-0.5, len(pcts) - 0.5 + width * (len(levels) - 1)), [m for *_, m in bars], log=True)
        for i, j, m in bars:
            if m > 0:
                ax.rect(j + (i - 0.5) * width, j + (i + 0.5) * width, 0, m, palette[levels[i]])
        ax.axes(list(np.arange(len(pcts)) + width * (len(levels) - 1) / 2), pcts)
        ident = dict(zip(where + ["direction"], key if isinstance(key, tuple) else (key,)))
        what = "sync latency" if ident["direction"] == "sync" else "clat"
        ax.labels(panel_title(ident), f"{what} ({label}, median of rounds)")
        ax.legend([(lv, palette[lv]) for lv in levels])
    return [Section("Completion latency percentiles", grid.svg(),
                    "Median over rounds of each percentile fio reported; log scale. "
                    "A job that fsyncs or fdatasyncs has a panel of those calls' latency.")]


def panel_title(ident: dict) -> str:
    """'db: oltp read': a job file's job by its section name, else the case and what it
    sweeps ('randread bs=4k write'); a sync panel by the call the job makes (fsync)."""
    try:
        params = orjson.loads(ident.get("params") or "{}")
    except orjson.JSONDecodeError:
        params = {}
    params = params if isinstance(params, dict) else {}
    direction = ident["direction"]
    if direction == "sync":
        direction = next((k for k in ("fsync", "fdatasync") if params.get(k)), "sync")
    case = str(ident.get("case", ""))
    if "job" in params:
        head = f"{case}: {params['job']}"
    else:
        swept = " ".join(f"{k}={v}" for k, v in params.items() if k != "workload" and v != case)
        head = f"{case} {swept}".strip()
    return f"{head} {direction}"
