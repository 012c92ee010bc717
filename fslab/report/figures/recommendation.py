"""The report's opening: what to choose for each built-in priority profile, with its evidence."""
from __future__ import annotations

from markupsafe import escape

from fslab.report.figures import FigureContext, Section

PLACE = "lead"


def sections(ctx: FigureContext) -> list[Section]:
    from fslab.recommend import BUILTIN, recommend
    from fslab.recommend.evidence import gather
    from fslab.recommend.render import first_text, html
    from fslab.store import Store
    if ctx.results_root is None or ctx.data.empty or "run_id" not in ctx.data:
        return []
    runs = sorted(ctx.data["run_id"].unique())
    if len(runs) != 1:   # a recommendation decides within one run's rounds
        return [Section("Recommendation", "<p>Recommendations are made per run: use "
                        f"<code>fslab recommend RUN_ID</code> for one of {escape(', '.join(runs))}.</p>")]
    store = Store(ctx.results_root)
    try:
        ev = gather(store, runs[0], known=ctx.analysis)
        recs = [recommend(ev, p) for p in BUILTIN.values()]
    finally:
        store.close()
    overview = "".join(
        f"<tr><td>{escape(r.priorities.name)}</td><td>{escape(first_text(r))}</td>"
        f"<td>{escape(r.paragraph)}</td></tr>" for r in recs)
    body = (f"<table><tr><th>priorities</th><th>first</th><th>why</th></tr>{overview}</table>"
            + "".join(f"<details><summary>{escape(r.priorities.name)}: scores and evidence</summary>"
                      f"{html(r)}</details>" for r in recs))
    return [Section("Recommendation", body,
                    "Scored from this run's measured verdicts only; features (documented or probed) "
                    "are shown as capabilities, never scored; "
                    "`fslab recommend RUN --priorities NAME|file.toml` for one profile or your own weights.")]

