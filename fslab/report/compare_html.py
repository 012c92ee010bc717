"""`fslab compare --html`: the comparison as one self-contained page (no scripts, no
external files): the runs, their options, every warning, the gate's verdict, and one row
per ranked metric with its change drawn as a dot and interval on a log-ratio axis."""
from __future__ import annotations

import math
from pathlib import Path
from typing import AbstractSet

from markupsafe import Markup, escape
from fslab.report.options import html_table
from fslab.report.compare import Compared, Gate

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:96em;color:#222}
table{border-collapse:collapse;margin:.6em 0 1.2em}th,td{padding:.25em .6em;border-bottom:1px solid #ddd;
text-align:left;vertical-align:middle}td.n{text-align:right;white-space:nowrap}td.c{white-space:nowrap}
.note{background:#fff6d6;border-left:4px solid #e0a800;padding:.4em .8em;margin:.4em 0}
.fail{background:#fde2e1;border-left:4px solid #c62828;padding:.4em .8em}
.pass{background:#e6f4ea;border-left:4px solid #2e7d32;padding:.4em .8em}
.dim{color:#666;font-size:90%}tr.answer td{font-weight:600}
"""
WIDTH, HEIGHT = 220, 18


def render(c: Compared, notes: list[str], verdict: Gate | None, path: Path) -> None:
    # here, not at the top: pandas and scipy load only when this runs
    from fslab.report import compare as cmp
    la, lb = c.a.label, c.b.label
    rows = c.rows.to_dict("records")
    indices = list(c.rows.index)
    span = _span(rows)
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>fslab compare "
             f"{escape(lb)} vs {escape(la)}</title><style>{STYLE}</style></head><body>",
             f"<h1>fslab compare: {escape(lb)} against {escape(la)} (baseline)</h1>",
             _runs_table(c)]
    if verdict is not None:
        parts.append(f"<p class='{'fail' if verdict.failed else 'pass'}'>{escape(verdict.text)}</p>")
    parts += [f"<p class='note'>{escape(n)}</p>" for n in notes]
    options = html_table([{**c.a.run, "run_id": la}, {**c.b.run, "run_id": lb}])
    if options:
        parts.append("<h2>Options per filesystem</h2>" + _table(options["columns"], [
            [r[col] for col in options["columns"]] for r in options["rows"]]))
    parts.append("<h2>Every ranked metric</h2><p class='dim'>Each workload's answer metrics "
                 "(what fslab's answer ranks it by) first, in bold. The drawing: how many times "
                 f"better B is than A, on a log axis from {1 / span:.2g}× (left: B worse) to "
                 f"{span:.2g}× (right: B better); the line at 1× is no change, the dot the "
                 "estimate, the bar its interval; red or green where the difference is "
                 "significant.</p>")
    header = ["workload", "metric", "", la, lb, "change [95% CI]", "", "p", "vs baseline"]
    header += ["gate"] if verdict is not None else []
    body = []
    for index, r in zip(indices, rows):
        cells = cmp.table_cells(r, la, lb)
        body.append((r["answer"], [cells["workload"], cells["metric"], cells[""], cells[la],
                                   cells[lb], cells["change [95% CI]"], Markup(_dot(r, span)),
                                   cells["p"], cells["vs baseline"]
                                   + (f" ({cells['note']})" if cells["note"] else "")]
                     + ([verdict.cell(index)] if verdict is not None else [])))
    parts.append(_table(header, [cells for _, cells in body],
                        classes=["answer" if answer else "" for answer, _ in body],
                        numeric={3, 4, 7}, nowrap={5, 8}))
    parts += [f"<p class='dim'>{escape(n)}</p>" for n in cmp.footnotes(c.rows)
              + ([cmp.GATE_NOTE] if verdict is not None else [])]
    parts.append("</body></html>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(str(p) for p in parts))


def _runs_table(c: Compared) -> str:
    rows = []
    for side, role in ((c.a, "A (baseline)"), (c.b, "B")):
        env = side.environment
        rows.append([role, side.label, side.run["run_id"], str(side.store.root),
                     env.hostname, env.kernel, env.tools.get("fio", ""),
                     side.run.get("command") or ""])
    header = ["", "column", "run id", "results", "host", "kernel", "fio", "command"]
    if all(r[1] == r[2] for r in rows):    # columns named by run id: once is enough
        header, rows = header[:1] + header[2:], [r[:1] + r[2:] for r in rows]
    return _table(header, rows)


def _table(header: list[str], rows: list[list[str]], classes: list[str] | None = None,
           numeric: AbstractSet[int] = frozenset(), nowrap: AbstractSet[int] = frozenset()) -> str:
    out = ["<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>"]
    for i, row in enumerate(rows):
        cls = f" class='{classes[i]}'" if classes and classes[i] else ""
        out.append(f"<tr{cls}>" + "".join(
            f"<td{' class=n' if j in numeric else ' class=c' if j in nowrap else ''}>{escape(v)}</td>" for j, v in enumerate(row))
            + "</tr>")
    return "".join(out) + "</table>"


def _span(rows: list[dict]) -> float:
    """The axis' reach: the largest ratio or inverse ratio any row shows (1.1 to 100)."""
    reach = 1.1
    for r in rows:
        for x in (r["ratio"], r["ratio_ci_lo"], r["ratio_ci_hi"]):
            if x and math.isfinite(x) and x > 0:
                reach = max(reach, x, 1 / x)
    return min(reach * 1.05, 100.0)


def _dot(r: dict, span: float) -> str:
    """An inline SVG: how many times better B is (B/A for higher-is-better metrics, A/B
    for the others) as a dot, its interval as a bar, 1× as a line."""
    def x(v: float) -> float:
        v = min(max(v, 1 / span), span)
        return WIDTH / 2 * (1 + math.log(v) / math.log(span))
    ratio, lo, hi = r["ratio"], r["ratio_ci_lo"], r["ratio_ci_hi"]
    if not (ratio and math.isfinite(ratio) and ratio > 0):
        return ""
    if r["better"] != "higher":
        ratio, lo, hi = 1 / ratio, 1 / hi, 1 / lo
    worse = r["worse_pct"] > 0
    colour = "#888" if not r["significant"] else "#c62828" if worse else "#2e7d32"
    bar = ""
    if math.isfinite(lo) and math.isfinite(hi) and lo > 0:
        bar = (f"<line x1='{x(lo):.1f}' x2='{x(hi):.1f}' y1='9' y2='9' stroke='{colour}' "
               "stroke-width='3'/>")
    return (f"<svg width='{WIDTH}' height='{HEIGHT}' role='img'><title>{escape(r['times'] or '')}</title>"
            f"<line x1='{WIDTH / 2}' x2='{WIDTH / 2}' y1='0' y2='{HEIGHT}' stroke='#999'/>{bar}"
            f"<circle cx='{x(ratio):.1f}' cy='9' r='4' fill='{colour}'/></svg>")
