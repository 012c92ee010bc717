"""fio: completion-latency percentiles (p50, p99, p99.9) per workload and level."""
from __future__ import annotations

import re

import numpy as np

from fslab.report.figures import FigureContext, Section
from fslab.report.format import axis_scale
from fslab.report.svg import colors, figure, to_svg

SUITES = ("fio",)
_PCT = re.compile(r"^(read|write|trim)_clat_(p[\d.]+)$")


def sections(ctx: FigureContext) -> list[Section]:
    s = ctx.summary[ctx.summary["metric"].str.match(_PCT)]
    if s.empty:
        return []
    s = s.assign(direction=s["metric"].str.replace(_PCT, r"\1", regex=True),
                 pct=s["metric"].str.replace(_PCT, r"\2", regex=True))
    where = [k for k in ctx.analysis.keys if k not in ("metric", "unit", "suite")]
    panels = list(s.groupby(where + ["direction"], sort=True, dropna=False))
    if not panels:
        return []
    palette = colors(ctx.analysis.levels)
    ncols = min(4, len(panels))
    fig, axes = figure(ncols, -(-len(panels) // ncols), width=2.8)
    for ax, (key, g) in zip(axes, panels):
        pcts = sorted(g["pct"].unique(), key=lambda p: float(p[1:]))
        levels = [lv for lv in ctx.analysis.levels if lv in set(g["level"])]
        scale, label = axis_scale(g["median"], "ns")
        width = 0.8 / max(1, len(levels))
        for i, lv in enumerate(levels):
            med = [g[(g["level"] == lv) & (g["pct"] == p)]["median"].mean() for p in pcts]
            ax.bar(np.arange(len(pcts)) + i * width, np.array(med) / scale, width,
                   label=lv, color=palette[lv])
        ax.set_xticks(np.arange(len(pcts)) + width * (len(levels) - 1) / 2, pcts)
        ax.set_yscale("log")
        ax.set_ylabel(f"clat ({label}, median of iterations)")
        ident = dict(zip(where + ["direction"], key))
        ax.set_title(f"{ident.get('case', '')} {ident['direction']}", fontsize=8)
        ax.legend(fontsize=6, frameon=False)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    return [Section("Completion latency percentiles", to_svg(fig),
                    "Median over iterations of each percentile fio reported; log scale.")]
