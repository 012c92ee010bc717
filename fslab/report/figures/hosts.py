"""Multi-host runs: the hosts compared like filesystems ('h2 vs h1 on ext4 ... +41%').

The same sentences `fslab report` prints in the terminal (fslab.report.hosts), from the
engine with host as the factor, per filesystem variant and workload. Shown only when a
suite's records come from two or more hosts and the report's factor is not already host.
"""
from __future__ import annotations

from markupsafe import escape

from fslab.metrics import label as metric_label
from fslab.report.figures import FigureContext, Section
from fslab.records import AGGREGATE_HOST, RECORD_COLUMNS
from fslab.report.hosts import host_comparisons

SUITES = ("*",)


def sections(ctx: FigureContext) -> list[Section]:
    if "host" in ctx.analysis.factor or "host" not in ctx.data:
        return []
    hosts = ctx.data.loc[ctx.data["host"] != AGGREGATE_HOST, "host"].unique()
    if len(hosts) < 2:
        return []
    pairs = host_comparisons(ctx.data[list(RECORD_COLUMNS)])
    if pairs.empty:
        return []
    rows = "".join(
        f"<tr><td>{escape(r['other'])} vs {escape(r['baseline'])}</td>"
        f"<td>{escape(r['fs'] if r['variant'] == 'default' else r['fs'] + ':' + r['variant'])}</td>"
        f"<td>{escape(r['case'])}</td><td>{escape(metric_label(r['metric'], r['suite']))}</td>"
        f"<td>{escape(r['verdict'])}</td><td>{escape(r['note'] or '')}</td></tr>"
        for r in pairs.to_dict("records"))
    significant = int(pairs["significant"].sum())
    body = ("<table><tr><th>hosts</th><th>filesystem</th><th>workload</th><th>metric</th>"
            f"<th>verdict</th><th>note</th></tr>{rows}</table>")
    return [Section(f"Hosts compared ({len(hosts)} hosts, {significant} of {len(pairs)} "
                    "differences significant)", body,
                    "Each filesystem and workload compared across hosts with the same tests as "
                    "filesystems (Holm-corrected over the host pairs of each metric; '~' = no "
                    "significant difference). fio's sum over hosts ('all') is never ranked. "
                    "`fslab report --factor host` gives the full tables with hosts as the factor.")]
