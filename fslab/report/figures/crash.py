"""crash: pass/fail table of the dm-flakey power-cut tests, per filesystem and workload.

A count, not a mean: "9/10" says how many power cuts left every fsynced byte
intact. Failures are findings (the filesystem's promise differs from Linux's
usual one), so they are shown in full, never averaged away.
"""
from __future__ import annotations

import pandas as pd
from markupsafe import escape

from fslab.report.figures import FigureContext, Section

SUITES = ("crash",)


def table(data: pd.DataFrame) -> pd.DataFrame:
    """Rows: filesystem level; columns: each workload plus totals; cells: 'passed/total'."""
    rows = {}
    cons = data[data["metric"] == "crash_consistent"]
    fsck = data[data["metric"] == "fsck_clean"]
    for level, g in cons.groupby("level", sort=False):
        row = {}
        for case, c in g.groupby("case", sort=True):
            row[case] = f"{int((c['value'] > 0.5).sum())}/{len(c)}"
        row["consistent"] = f"{int((g['value'] > 0.5).sum())}/{len(g)}"
        f = fsck[fsck["level"] == level]
        row["checker clean"] = f"{int((f['value'] > 0.5).sum())}/{len(f)}" if len(f) else "no checker"
        rows[level] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def sections(ctx: FigureContext) -> list[Section]:
    t = table(ctx.data)
    if t.empty:
        return []
    head = "".join(f"<th>{escape(c)}</th>" for c in ["filesystem", *t.columns])
    body = []
    for level, row in t.iterrows():
        cells = []
        for col in t.columns:
            v = row[col]
            passed, _, total = str(v).partition("/")
            bad = total and passed != total
            style = ' style="color:#b00020;font-weight:bold"' if bad else ""
            cells.append(f"<td{style}>{escape(v if isinstance(v, str) else '')}</td>")
        body.append(f"<tr><th>{escape(level)}</th>{''.join(cells)}</tr>")
    html = f"<table class=\"crash\"><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    return [Section("Crash consistency (dm-flakey power cuts)", html,
                    "Power cuts survived with every fsynced file intact / cuts made; 'checker "
                    "clean' counts the filesystem checker's verdicts after recovery. Raw "
                    "details per cut: crash.json next to each unit.")]
