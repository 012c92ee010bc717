"""aging (S4): grep cost and layout score vs aging steps, aged vs unaged, one panel per method.

Solid lines are the aged filesystem, dashed its unaged twin (same type, options and
image size, the same tree copied on fresh); one colour per filesystem. Each point is
the median over iterations at that step. Filesystems without FIEMAP (ZFS) have no
layout line, and the caption says so instead of drawing zeros.
"""
from __future__ import annotations

import orjson
import pandas as pd

from fslab.report.figures import FigureContext, Section
from fslab.report.svg import colors, figure, to_svg

SUITES = ("aging",)
PANELS = (("grep_cost", "grep cost"), ("layout_score", "layout score (1 = sequential)"))
X_AXIS = {"git": "successful git pulls", "churn": "churn steps"}


def curves(data: pd.DataFrame) -> pd.DataFrame:
    """Rows with a step: case, level, step, quantity, state (aged/unaged), median value."""
    d = data[data["metric"].str.match(r"^(grep_cost|layout_score)_(aged|unaged)$")].copy()
    if d.empty:
        return d
    d["step"] = [orjson.loads(p).get("step") for p in d["params"]]
    d = d.dropna(subset=["step"])
    d[["quantity", "state"]] = d["metric"].str.extract(r"^(grep_cost|layout_score)_(aged|unaged)$")
    return (d.groupby(["case", "level", "step", "quantity", "state", "unit"], as_index=False)
            ["value"].median())


def sections(ctx: FigureContext) -> list[Section]:
    c = curves(ctx.data)
    if c.empty:
        return []
    palette = colors(ctx.analysis.levels)
    out = []
    for case, g in c.groupby("case", sort=True):
        fig, axes = figure(2, 1, width=3.4, height=2.4)
        for ax, (quantity, label) in zip(axes, PANELS):
            q = g[g["quantity"] == quantity]
            for (level, state), s in q.groupby(["level", "state"], sort=True):
                s = s.sort_values("step")
                ax.plot(s["step"], s["value"], marker="o", markersize=3,
                        linestyle="-" if state == "aged" else "--", color=palette.get(level),
                        label=f"{level} {state}")
            ax.set_xlabel(X_AXIS.get(case, f"{case} aging step"))
            units = sorted(set(q["unit"]))   # s/GB (s/GiB in stores of older versions)
            ax.set_ylabel(f"{label} ({units[0]})" if quantity == "grep_cost" and units else label)
            if quantity == "layout_score":
                ax.set_ylim(0, 1.05)
            if not q.empty:
                ax.legend(fontsize=6, frameon=False)
        no_layout = sorted(set(g["level"]) - set(g[g["quantity"] == "layout_score"]["level"]))
        caption = ("Solid: aged; dashed: unaged twin. Median over rounds per step. "
                   "Grep cost = cold-cache recursive grep time / tree size. Step 0: both "
                   "filesystems fresh, the noise floor.")
        if no_layout:
            caption += (f" Layout score not measurable on {', '.join(no_layout)} "
                        "(no FIEMAP); nothing is drawn for it.")
        out.append(Section(f"Aging ({case}): grep cost and layout vs steps", to_svg(fig), caption))
    return out
