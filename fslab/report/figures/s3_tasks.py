"""S3: the file-server task table (the study's layout) and elapsed time per task.

One row per task, one column per filesystem; a cell is the median over the
sequence's repetitions of elapsed time, CPU % (the task's processes, GNU time's
%CPU) and major/minor page faults, with the mean beside it (the study reported
means of 3 runs). Capacity rows follow: available blocks as a share of the raw
partition, after mkfs and after every file was removed, to 0.01 % (the study's
differences between filesystems are 0.01-0.02 %).
"""
from __future__ import annotations

import numpy as np

from fslab.report.figures import FigureContext, Section
from fslab.report.figures._study import cell, html_table, medians
from fslab.report.svg import colors, figure, to_svg

SUITES = ("tasks",)
TASK_METRICS = ["elapsed", "cpu_percent", "major_faults", "minor_faults"]


def task_table(ctx: FigureContext) -> tuple[list[dict], list[str]]:
    levels = [lv for lv in ctx.analysis.levels if lv in set(ctx.summary["level"])]
    m = medians(ctx.summary, TASK_METRICS + ["capacity_initial", "capacity_residual"],
                ["case", "level"])
    mean = medians(ctx.summary, TASK_METRICS + ["capacity_initial", "capacity_residual"],
                   ["case", "level"], of="mean")
    rows = []
    for task in sorted(m.index.get_level_values("case").unique()):
        row = {"task": task}
        for lv in levels:
            if (task, lv) not in m.index:
                continue
            v, a = m.loc[(task, lv)], mean.loc[(task, lv)]
            row[lv] = (f"{cell(v.get('elapsed'), 's')} (mean {cell(a.get('elapsed'), 's')}) · "
                       f"{cell(v.get('cpu_percent'), '%')} CPU · "
                       f"{v.get('major_faults', 0):.0f}/{v.get('minor_faults', 0):.0f} faults")
        rows.append(row)
    for metric, label in (("capacity_initial", "capacity after mkfs"),
                          ("capacity_residual", "capacity after removals")):
        if metric in m.columns:
            by_level = m[metric].dropna().droplevel("case")
            by_mean = mean[metric].dropna().droplevel("case")
            rows.append({"task": label, **{lv: _percent(by_level.get(lv), by_mean.get(lv))
                                           for lv in levels}})
    return rows, ["task", *levels]


def _percent(median: float, mean: float) -> str:
    """A capacity share to 0.01 %: the filesystems differ in the second decimal."""
    if median is None or np.isnan(median):
        return "–"
    return f"{median:.2f} % (mean {mean:.2f} %)"


def elapsed_bars(ctx: FigureContext) -> str | None:
    s = ctx.summary[ctx.summary["metric"] == "elapsed"]
    if s.empty:
        return None
    tasks = sorted(s["case"].unique())
    levels = [lv for lv in ctx.analysis.levels if lv in set(s["level"])]
    palette = colors(ctx.analysis.levels)
    fig, (ax,) = figure(1, 1, width=7.5, height=2.6)
    width = 0.8 / max(1, len(levels))
    x = np.arange(len(tasks))
    for i, lv in enumerate(levels):
        g = s[s["level"] == lv].set_index("case")
        ax.bar(x + i * width, [g["median"].get(t, np.nan) for t in tasks], width,
               label=lv, color=palette[lv])
    ax.set_xticks(x + width * (len(levels) - 1) / 2, tasks, rotation=30, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("elapsed (s, median)")
    ax.legend(fontsize=6, frameon=False)
    return to_svg(fig)


def sections(ctx: FigureContext) -> list[Section]:
    if ctx.summary[ctx.summary["metric"] == "elapsed"].empty:
        return []
    rows, columns = task_table(ctx)
    out = [Section("S3 file-server tasks", html_table(rows, columns, "tasks"),
                   "Median over repetitions: elapsed · CPU % of the task's processes "
                   "((user+sys)/elapsed, like GNU time) · major/minor page faults. Capacity: "
                   "blocks available to a user / blocks of the raw partition. 09 and 10 run "
                   "before 08, while the trees exist.")]
    bars = elapsed_bars(ctx)
    if bars:
        out.append(Section("Elapsed time per task", bars, "Median over repetitions; log scale."))
    return out
