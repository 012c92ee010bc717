"""S0's views of fio sweeps: throughput vs block size, IOPS vs threads, CPU vs file size
(at the most jobs, as the study's figures), maximum latency, throughput as % of the raw
device, and efficiency: operations per CPU percent, per direction (the study's word and
its read/write split).

Each view appears only when the run has what it needs (a block-size, numjobs or
size sweep; a `raw` level), so plain fio runs are not cluttered. Values are
combined per iteration first (read + write; the larger of read and write
maximum latency), then summarised by the median over iterations. CPU is
system-wide (/proc/stat, % of all CPUs), which includes work done outside fio:
zfs-fuse's daemon, kernel threads.
"""
from __future__ import annotations

from typing import Callable, Mapping

import numpy as np
import pandas as pd

from fslab.plan.profiles import parse_size
from fslab.report.figures import FigureContext, Section
from fslab.report.figures._study import cell, html_table, with_params
from fslab.metrics.format import number
from fslab.report.svg import colors, figure, to_svg
from fslab.report.tables import workload_label

SUITES = ("fio",)
RAW = "raw"
STYLES = ("-", "--", ":", "-.")


def per_iteration(data: pd.DataFrame) -> pd.DataFrame:
    """One row per (level, case, params, iteration): throughput, IOPS, max latency, CPU."""
    wide = data.pivot_table(index=["level", "suite", "case", "params", "iteration"],
                            columns="metric", values="value", aggfunc="first", observed=True)

    def col(name: str) -> pd.Series:
        return wide[name] if name in wide.columns else pd.Series(np.nan, index=wide.index)
    out = pd.DataFrame({
        "throughput": col("read_bw").fillna(0) + col("write_bw").fillna(0),
        "iops": col("read_iops").fillna(0) + col("write_iops").fillna(0),
        "read_iops": col("read_iops"),
        "write_iops": col("write_iops"),
        "mixed": (col("read_iops").fillna(0) > 0) & (col("write_iops").fillna(0) > 0),
        "lat_max": np.fmax(col("read_lat_max"), col("write_lat_max")),
        "cpu": col("cpu_busy_system_wide"),
    }, index=wide.index)
    with np.errstate(divide="ignore", invalid="ignore"):
        busy = out["cpu"].where(out["cpu"] > 0)
        out["iops_per_cpu"] = out["iops"] / busy
        out["read_iops_per_cpu"] = out["read_iops"] / busy
        out["write_iops_per_cpu"] = out["write_iops"] / busy
    return with_params(out.reset_index())


def medians_of(it: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    values = ["throughput", "iops", "lat_max", "cpu", "iops_per_cpu", "read_iops_per_cpu",
              "write_iops_per_cpu"]
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


def case_rows(m: pd.DataFrame, levels: list[str], value: Callable[[dict], str]
              ) -> tuple[list[dict], list[str]]:
    """A table: one row per (case, params), one column per level, cells from value(row)."""
    rows = []
    for (suite, case, params), g in m.groupby(["suite", "case", "params"], sort=True):
        row = {"workload": workload_label({"suite": suite, "case": case, "params": params})}
        for r in g.to_dict("records"):
            row[r["level"]] = value(r)
        rows.append(row)
    return rows, ["workload", *[lv for lv in levels if lv in set(m["level"])]]


def per_direction(r: Mapping[str, float]) -> str:
    def one(v: float) -> str:
        return "–" if pd.isna(v) else number(v)
    return f"read {one(r['read_iops_per_cpu'])} · write {one(r['write_iops_per_cpu'])}"


def at_most_jobs(sz: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The size sweep at each case's largest numjobs (the study plotted CPU at 16 jobs),
    and how to say it."""
    if sz.empty or "numjobs" not in sz.columns or sz["numjobs"].isna().all():
        return sz, "each case's job count"
    n = pd.to_numeric(sz["numjobs"], errors="coerce")
    most = n.groupby(sz["case"]).transform("max")
    top = sorted(set(n[n == most].dropna().astype(int)))
    return sz[n == most], (f"{top[0]} jobs" if len(top) == 1 else
                           f"each case's most jobs ({', '.join(map(str, top))})")


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
                           "Read + write throughput, median over rounds (S0 Test 1 and 3)."))
    nj = swept(it, "numjobs")
    panel = ["size"] if "size" in nj.columns and nj["size"].notna().any() else []
    svg = line_panels(nj, panel, "numjobs", "iops", ["level", "case"], levels,
                      "jobs (threads)", "IOPS", 1.0)
    if svg:
        out.append(Section("IOPS vs threads", svg,
                           "Read + write IOPS, median over rounds; a line per filesystem × "
                           "workload, a panel per file size (S0 Test 2)."))
    sz, jobs = at_most_jobs(swept(it, "size"))
    svg = line_panels(sz, ["case"], "size", "cpu", ["level"], levels, "file size (MiB)",
                      "CPU busy, system-wide (%)", 1.0, xscale=1 << 20)
    if svg:
        out.append(Section("CPU vs file size", svg,
                           "System-wide CPU (/proc/stat: all processes and kernel threads, "
                           f"% of all CPUs) during the run, at {jobs} (the study's figures are "
                           "at 16 jobs)."))
    sweeps = it[[c for c in it.columns if c in ("bs", "numjobs", "size", "runtime")]].notna().any(axis=1)
    lat = medians_of(it[sweeps], ["suite", "case", "params", "level"])
    if not lat.empty:
        rows, cols = case_rows(lat, levels, lambda r: cell(r["lat_max"], "ns"))
        out.append(Section("Maximum total latency", html_table(rows, cols, "s0-latency"),
                           "fio's lat max (submission to completion), the larger of read and "
                           "write; median over rounds."))
    if RAW in set(it["level"]):
        eff = efficiency(it)
        if not eff.empty:
            rows, cols = case_rows(eff, levels, lambda r: cell(r["pct_of_raw"], "%"))
            out.append(Section("Throughput as % of the raw device",
                               html_table(rows, cols, "s0-pct-of-raw"),
                               "Median throughput as % of the raw device's in the same run and "
                               "case (at a fixed block size IOPS give the same ratio). Above "
                               "100%: the filesystem's cache (page cache, ZFS's ARC) served more "
                               "of a buffered run than the raw device's page cache did."))
    mixed = it[it["mixed"] & sweeps]
    if not mixed.empty:
        m = medians_of(mixed, ["suite", "case", "params", "level"])
        rows, cols = case_rows(m, levels, per_direction)
        out.append(Section("Efficiency: operations per CPU percent (mixed read/write)",
                           html_table(rows, cols, "s0-efficiency"),
                           "Read IOPS / system-wide CPU % and write IOPS / CPU %, per "
                           "round, then the median (S0 Test 3; the study's 'efficiency', "
                           "reported per direction). Higher: more work per unit of CPU."))
    return out
