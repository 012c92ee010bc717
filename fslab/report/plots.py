"""Generic figures for any suite: they read the analysis; a metric's label is the catalogue's."""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from fslab.analysis import Analysis
from fslab.metrics import is_detail, label as metric_label
from fslab.metrics.format import axis_scale
from fslab.report.svg import PALETTE, colors
from fslab.report.svgplot import Grid, box_stats, nice_ticks, tick_label

MAX_PANELS = 12          # more headline metrics than this: the tables carry the rest
PANELS_PER_ROW = 4
MAX_DOTS = 30            # more iterations per level than this: a box instead of every dot
QQ_POINTS = 200          # quantiles drawn per metric in a QQ plot


def headline_metrics(a: Analysis, rows: pd.DataFrame) -> list[tuple[str, str]]:
    """(metric, unit) of the ranked, non-detail metrics in these summary rows."""
    ranked = rows[rows["better"].isin(["higher", "lower"]) & ~rows["metric"].map(is_detail)]
    return list(dict.fromkeys(zip(ranked["metric"], ranked["unit"])))[:MAX_PANELS]


def described_metrics(a: Analysis, rows: pd.DataFrame) -> list[tuple[str, str]]:
    """(metric, unit) of the unranked, non-detail metrics that are not all zero."""
    described = rows[~rows["better"].isin(["higher", "lower"]) & ~rows["metric"].map(is_detail)]
    nonzero = described.groupby(["metric", "unit"], sort=False)["max"].transform(lambda m: (m != 0).any())
    described = described[nonzero.astype(bool)]
    return list(dict.fromkeys(zip(described["metric"], described["unit"])))[:MAX_PANELS]


def medians_and_points(a: Analysis, summary: pd.DataFrame, data: pd.DataFrame,
                       metrics: list[tuple[str, str]]) -> str | None:
    """One panel per metric: every iteration as a dot (a box plot when there are too many
    to see), each level's median as a bar across them with the interval the verdict
    table prints (the order-statistic interval of the median, where n allows one),
    outliers ringed in red. Titled as a person names the metric."""
    if not metrics:
        return None
    palette = colors(a.levels)
    grid = Grid(len(metrics), PANELS_PER_ROW)
    by_metric = dict(list(data.groupby(["metric", "unit"], sort=False)))
    for ax, (metric, unit) in zip(grid.panels, metrics):
        s = summary[(summary["metric"] == metric) & (summary["unit"] == unit)]
        d = by_metric[(metric, unit)]
        scale, label = axis_scale(d["value"], unit)
        by_level = {lv: v for lv, v in d.groupby("level", sort=False)}
        med, lo, hi = (s[c].to_numpy(dtype=float) / scale
                       for c in ("median", "median_ci_lo", "median_ci_hi"))
        shown = [*med, *lo[np.isfinite(lo)], *hi[np.isfinite(hi)], *(d["value"] / scale)]
        ax.limits((-0.5 - 0.04 * len(s), len(s) - 0.5 + 0.04 * len(s)), shown,
                  zero=bool((d["value"] >= 0).all()))
        for i, lv in enumerate(s["level"]):
            if np.isfinite(lo[i]) and np.isfinite(hi[i]):
                ax.rect(i - 0.22, i + 0.22, lo[i], hi[i], palette[lv], 0.25)
            ax.line(i - 0.3, med[i], i + 0.3, med[i], palette[lv], 2.2)
            v = by_level.get(lv, d.iloc[0:0])
            values = v["value"].to_numpy() / scale
            if len(v) > MAX_DOTS:
                ax.box(i, box_stats(values))
            elif len(v):
                ax.dots(i + (np.arange(len(v)) % 7 - 3) * 0.04, values)
            out = values[v["outlier"].to_numpy(dtype=bool)]
            ax.dots(np.full(len(out), i), out, "red", r=3.2, ring=True)
        ax.axes(list(range(len(s))), list(s["level"]), rotate=len(s) > 3)
        better = s["better"].iloc[0]
        arrow = {"higher": " ↑", "lower": " ↓"}.get(better, "")
        ax.labels(f"{metric_label(metric, s['suite'].iloc[0] if 'suite' in s else None)}{arrow}", label)
    return grid.svg()


def residual_qq(a: Analysis, summary: pd.DataFrame, data: pd.DataFrame) -> str | None:
    """Normal QQ plot of ANOVA residuals (value − its level's mean, divided by the metric's
    residual sd) for the headline metrics: points off the line = not normal."""
    metrics = headline_metrics(a, summary)
    by_metric = dict(list(data.groupby(["metric", "unit"], sort=False)))
    drawn = []
    for metric, unit in metrics:
        d = by_metric[(metric, unit)]
        resid = d["value"] - d.groupby("level")["value"].transform("mean")
        sd = resid.std()
        if len(resid) < 3 or not sd > 0:
            continue
        (theory, ordered), _ = stats.probplot(resid / sd, dist="norm")
        keep = np.unique(np.linspace(0, len(theory) - 1, QQ_POINTS).astype(int))   # tails kept
        drawn.append((metric, theory[keep], ordered[keep]))
    if not drawn:
        return None
    grid = Grid(1, 1, width=3.2, height=2.8)
    ax = grid.panels[0]
    lim = 1.05 * max(float(np.max(np.abs(np.concatenate([t, o])))) for _, t, o in drawn)
    ax.limits((-lim, lim), [-lim / 1.1, lim / 1.1])
    ax.line(-lim, -lim, lim, lim, "grey", 0.8)
    for i, (metric, theory, ordered) in enumerate(drawn):
        ax.dots(theory, ordered, PALETTE[i % len(PALETTE)], r=1.5)
    ax.axes(*_ticks(-lim, lim))
    ax.labels(ylabel="standardised residual")
    ax.text(ax.left + ax.w / 2, ax.top + ax.h + 28, "normal quantile", 7)
    ax.legend([(metric_label(m), PALETTE[i % len(PALETTE)]) for i, (m, _, _) in enumerate(drawn)],
              left=True)
    return grid.svg()


def _ticks(lo: float, hi: float) -> tuple[list[float], list[str]]:
    ticks = nice_ticks(lo, hi)
    return ticks, [tick_label(t) for t in ticks]
