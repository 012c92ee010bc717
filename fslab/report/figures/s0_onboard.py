"""S0's views of fio sweeps: throughput vs block size, IOPS vs threads, CPU vs file size,
maximum latency, efficiency vs the raw device and operations per CPU percent.

Each view appears only when the run has what it needs (a block-size, numjobs or
size sweep; a `raw` level), so plain fio runs are not cluttered. Values are
combined per iteration first (read + write; the larger of read and write
maximum latency), then summarised by the median over iterations. CPU is
system-wide (/proc/stat, % of all CPUs), which includes work done outside fio:
zfs-fuse's daemon, kernel threads.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from fslab.profiles import parse_size
from fslab.report.figures import FigureContext, Section
from fslab.report.figures._study import cell, html_table, with_params
from fslab.report.svg import colors, figure, to_svg
from fslab.report.tables import workload_label

SUITES = ("fio",)
RAW = "raw"
STYLES = ("-", "--", ":", "-.")


def per_iteration(data: pd.DataFrame) -> pd.DataFrame:
    """One row per (level, case, params, iteration): throughput, IOPS, max latency, CPU."""
    wide = data.pivot_table(index=["level", "suite", "case", "params", "iteration"],
                            columns="metric", values="value", aggfunc="first", observed=True)

    def col(name):
        return wide[name] if name in wide.columns else pd.Series(np.nan, index=wide.index)
    out = pd.DataFrame({
        "throughput": col("read_bw").fillna(0) + col("write_bw").fillna(0),
        "iops": col("read_iops").fillna(0) + col("write_iops").fillna(0),
        "mixed": (col("read_iops").fillna(0) > 0) & (col("write_iops").fillna(0) > 0),
        "lat_max": np.fmax(col("read_lat_max"), col("write_lat_max")),
        "cpu": col("cpu_busy_system_wide"),
    }, index=wide.index)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["iops_per_cpu"] = out["iops"] / out["cpu"].where(out["cpu"] > 0)
    return with_params(out.reset_index())


def medians_of(it: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    values = ["throughput", "iops", "lat_max", "cpu", "iops_per_cpu"]
    return it.groupby(by, sort=True, dropna=False)[values].median().reset_index()


def swept(it: pd.DataFrame, key: str) -> pd.DataFrame:
    """Rows of cases that sweep `key` over at least two values."""
    if key not in it.columns:
        return it.iloc[0:0]
    n = it.groupby(["case"])[key].transform("nunique")
    return it[it[key].notna() & (n >= 2)]


def line_panels(it: pd.DataFrame, panel_by: list[str], x: str, y: str, line_by: list[str],
                levels: list[str], xlabel: str, ylabel: str, yscale: float,
                logx: bool = False, xscale: float = 1.0) -> str | None:
    """Small multiples: one panel per `panel_by` group, a line per `line_by` group."""
    if it.empty:
        return None
    m = medians_of(it, panel_by + line_by + [x])
    m["_x"] = m[x].map(lambda v: parse_size(str(v)) / xscale)
    panels = list(m.groupby(panel_by, sort=True, dropna=False))
    palette = colors(levels)
    ncols = min(3, len(panels))
    fig, axes = figure(ncols, -(-len(panels) // ncols), width=3.0, height=2.4)
    # colour = level (line_by[0]); line style = the rest (e.g. the workload)
    rest = sorted({tuple(k[1:]) for k in m[line_by].itertuples(index=False)})
    styles = {r: STYLES[i % len(STYLES)] for i, r in enumerate(rest)}
    for ax, (key, g) in zip(axes, panels):
        for lkey, line in g.groupby(line_by, sort=True, dropna=False):
            lkey = lkey if isinstance(lkey, tuple) else (lkey,)
            line = line.sort_values("_x")
            ax.plot(line["_x"], line[y] / yscale, marker="o", markersize=3,
                    label=" ".join(map(str, lkey)), color=palette.get(lkey[0]),
                    linestyle=styles[tuple(lkey[1:])])
        if logx:
            ax.set_xscale("log")
        key = key if isinstance(key, tuple) else (key,)
        ax.set_title(" ".join(str(v) if c == "case" else f"{c}={v}"
                              for c, v in zip(panel_by, key) if not pd.isna(v)), fontsize=8)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=6, frameon=False)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    return to_svg(fig)


def case_rows(m: pd.DataFrame, levels: list[str], value) -> tuple[list[dict], list[str]]:
    """A table: one row per (case, params), one column per level, cells from value(row)."""
    rows = []
    for (suite, case, params), g in m.groupby(["suite", "case", "params"], sort=True):
        row = {"workload": workload_label({"suite": suite, "case": case, "params": params})}
        for r in g.to_dict("records"):
            row[r["level"]] = value(r)
        rows.append(row)
    return rows, ["workload", *[lv for lv in levels if lv in set(m["level"])]]


def efficiency(it: pd.DataFrame) -> pd.DataFrame:
    """Each level's median throughput as % of the raw device's, for cases raw also ran."""
    m = medians_of(it, ["suite", "case", "params", "level"])
    raw = m[m["level"] == RAW].set_index(["suite", "case", "params"])["throughput"]
    m = m[m["level"] != RAW].join(raw.rename("raw_throughput"), on=["suite", "case", "params"],
                                  how="inner")
    m["pct_of_raw"] = 100.0 * m["throughput"] / m["raw_throughput"].where(m["raw_throughput"] > 0)
    return m


def sections(ctx: FigureContext) -> list[Section]:
    it = per_iteration(ctx.data)
    levels = ctx.analysis.levels
    out = []
    bs = swept(it, "bs")
    panel = ["case", "runtime"] if "runtime" in bs.columns and bs["runtime"].notna().any() else ["case"]
    svg = line_panels(bs, panel, "bs", "throughput", ["level"], levels, "block size (B, log)",
                      "MiB/s", 1 << 20, logx=True)
    if svg:
        out.append(Section("Throughput vs block size", svg,
                           "Read + write throughput, median over iterations (S0 Test 1 and 3)."))
    nj = swept(it, "numjobs")
    panel = ["size"] if "size" in nj.columns and nj["size"].notna().any() else []
    svg = line_panels(nj, panel, "numjobs", "iops", ["level", "case"], levels,
                      "jobs (threads)", "IOPS", 1.0)
    if svg:
        out.append(Section("IOPS vs threads", svg,
                           "Read + write IOPS, median over iterations; a line per filesystem × "
                           "workload, a panel per file size (S0 Test 2)."))
    sz = swept(it, "size")
    if not sz.empty:
        sz = sz.groupby(["level", "case", "size", "iteration"], sort=True)[
            ["throughput", "iops", "lat_max", "cpu", "iops_per_cpu"]].mean().reset_index()
    svg = line_panels(sz, ["case"], "size", "cpu", ["level"], levels, "file size (MiB)",
                      "CPU busy, system-wide (%)", 1.0, xscale=1 << 20)
    if svg:
        out.append(Section("CPU vs file size", svg,
                           "System-wide CPU (/proc/stat: all processes and kernel threads, "
                           "% of all CPUs) during the run, averaged over the numjobs points."))
    sweeps = it[[c for c in it.columns if c in ("bs", "numjobs", "size", "runtime")]].notna().any(axis=1)
    lat = medians_of(it[sweeps], ["suite", "case", "params", "level"])
    if not lat.empty:
        rows, cols = case_rows(lat, levels, lambda r: cell(r["lat_max"], "ns"))
        out.append(Section("Maximum total latency", html_table(rows, cols, "s0-latency"),
                           "fio's lat max (submission to completion), the larger of read and "
                           "write; median over iterations."))
    if RAW in set(it["level"]):
        eff = efficiency(it)
        if not eff.empty:
            rows, cols = case_rows(eff, levels, lambda r: cell(r["pct_of_raw"], "%"))
            out.append(Section("Efficiency vs raw device", html_table(rows, cols, "s0-efficiency"),
                               "Median throughput as % of the raw device's in the same run and "
                               "case (at a fixed block size IOPS give the same ratio). Above "
                               "100%: the filesystem's cache (page cache, ZFS's ARC) served more "
                               "of a buffered run than the raw device's page cache did."))
    mixed = it[it["mixed"] & sweeps]
    if not mixed.empty:
        m = medians_of(mixed, ["suite", "case", "params", "level"])
        rows, cols = case_rows(m, levels, lambda r: "–" if pd.isna(r["iops_per_cpu"])
                               else f"{r['iops_per_cpu']:,.0f}")
        out.append(Section("Operations per CPU percent (mixed read/write)",
                           html_table(rows, cols, "s0-iops-per-cpu"),
                           "(read + write IOPS) / system-wide CPU %, per iteration, then the "
                           "median (S0 Test 3). Higher: more work per unit of CPU."))
    return out
