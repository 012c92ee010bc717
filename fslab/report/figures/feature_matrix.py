"""Suite `features`: the feature matrix, each cell's claim joined with its live probe."""
from __future__ import annotations

from markupsafe import escape

from fslab.report.figures import FigureContext, Section
from fslab.features.catalog import FEATURES
from fslab.features.matrix import build, probe_outcomes

SUITES = ("features",)


def sections(ctx: FigureContext) -> list[Section]:
    outcomes, impls = probe_outcomes(ctx.data, ctx.results_root)
    if not outcomes:
        return []
    levels = [lv for lv in ctx.analysis.levels if any(k[0] == lv for k in outcomes)]
    m = build(levels, outcomes, impls)
    head = "".join(f"<th>{escape(lv)}</th>" for lv in levels)
    rows = []
    for f in FEATURES:
        cells = []
        for lv in levels:
            c = m.cell(lv, f.key)
            why = f"<br><small>{escape(c.probe.detail)}</small>" if c.probe else ""
            cells.append(f"<td title=\"{escape(c.feature_claim.note)} ({escape(c.feature_claim.ref)})\">"
                         f"<b>{escape(c.feature_claim.status)}</b> · {escape(c.status)}{why}</td>")
        rows.append(f"<tr><td>{escape(f.category)}</td><td>{escape(f.title)}</td>{''.join(cells)}</tr>")
    return [Section("Feature matrix", f"<table><tr><th>category</th><th>feature</th>{head}</tr>"
                    f"{''.join(rows)}</table>",
                    "FeatureClaim from each filesystem's documentation (hover for note and reference), "
                    "then what the live probe saw here.")]
