"""Generic figures for any suite: they read the analysis, never a metric's meaning."""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from fslab.analysis import Analysis, is_detail
from fslab.report.format import axis_scale
from fslab.report.svg import colors, figure, to_svg

MAX_PANELS = 12          # more headline metrics than this: the tables carry the rest
PANELS_PER_ROW = 4
MAX_DOTS = 30            # more iterations per level than this: a box instead of every dot
QQ_POINTS = 200          # quantiles drawn per metric in a QQ plot


def headline_metrics(a: Analysis, rows: pd.DataFrame) -> list[tuple[str, str]]:
    """(metric, unit) of the ranked, non-detail metrics in these summary rows."""
    ranked = rows[rows["better"].isin(["higher", "lower"]) & ~rows["metric"].map(is_detail)]
    return list(dict.fromkeys(zip(ranked["metric"], ranked["unit"])))[:MAX_PANELS]


def bars_and_points(a: Analysis, summary: pd.DataFrame, data: pd.DataFrame) -> str | None:
    """One panel per headline metric: mean with its 95% t-interval as a bar, every
    iteration as a dot on top (a box plot when there are too many to see), outliers
    ringed in red."""
    metrics = headline_metrics(a, summary)
    if not metrics:
        return None
    palette = colors(a.levels)
    ncols = min(PANELS_PER_ROW, len(metrics))
    nrows = -(-len(metrics) // ncols)
    fig, axes = figure(ncols, nrows)
    for ax, (metric, unit) in zip(axes, metrics):
        s = summary[(summary["metric"] == metric) & (summary["unit"] == unit)]
        d = data[(data["metric"] == metric) & (data["unit"] == unit)]
        scale, label = axis_scale(d["value"], unit)
        x = np.arange(len(s))
        err = np.vstack([s["mean"] - s["mean_ci_lo"], s["mean_ci_hi"] - s["mean"]]) / scale
        ax.bar(x, s["mean"] / scale, yerr=np.nan_to_num(err), capsize=3, alpha=0.55,
               color=[palette[lv] for lv in s["level"]], error_kw={"elinewidth": 1})
        for i, lv in enumerate(s["level"]):
            v = d[d["level"] == lv]
            if len(v) > MAX_DOTS:
                ax.boxplot(v["value"] / scale, positions=[i], widths=0.35, showfliers=False,
                           medianprops={"color": "black"}, zorder=3)
            else:
                jitter = (np.arange(len(v)) % 7 - 3) * 0.04
                ax.scatter(i + jitter, v["value"] / scale, s=9, color="black", zorder=3, linewidths=0)
            out = v[v["outlier"]]
            ax.scatter(np.full(len(out), i), out["value"] / scale, s=40, facecolors="none",
                       edgecolors="red", zorder=4)
        ax.set_xticks(x, s["level"], rotation=30 if len(s) > 3 else 0, ha="right" if len(s) > 3 else "center")
        arrow = "↑" if s["better"].iloc[0] == "higher" else "↓"
        ax.set_title(f"{metric} {arrow}", fontsize=8)
        ax.set_ylabel(label)
    for ax in axes[len(metrics):]:
        ax.set_visible(False)
    return to_svg(fig)


def residual_qq(a: Analysis, summary: pd.DataFrame, data: pd.DataFrame) -> str | None:
    """Normal QQ plot of ANOVA residuals (value − its level's mean, divided by the metric's
    residual sd) for the headline metrics: points off the line = not normal."""
    metrics = headline_metrics(a, summary)
    fig, axes = figure(1, 1, width=3.2, height=2.8)
    ax, drawn = axes[0], 0
    for metric, unit in metrics:
        d = data[(data["metric"] == metric) & (data["unit"] == unit)]
        resid = d["value"] - d.groupby("level")["value"].transform("mean")
        sd = resid.std()
        if len(resid) < 3 or not sd > 0:
            continue
        (theory, ordered), _ = stats.probplot(resid / sd, dist="norm")
        keep = np.unique(np.linspace(0, len(theory) - 1, QQ_POINTS).astype(int))   # tails kept
        ax.scatter(theory[keep], ordered[keep], s=8, label=metric, linewidths=0)
        drawn += 1
    if not drawn:
        import matplotlib.pyplot as plt
        plt.close(fig)
        return None
    lim = max(abs(v) for v in ax.get_xlim() + ax.get_ylim())
    ax.plot([-lim, lim], [-lim, lim], color="grey", linewidth=0.8)
    ax.set_xlabel("normal quantile")
    ax.set_ylabel("standardised residual")
    ax.legend(fontsize=6, frameon=False)
    return to_svg(fig)
