"""The recommendation for the priorities asked (`fslab report --priorities NAME|file.toml`):
its ranking, paragraph and evidence. Asked for none, the report shows the built-in profile
this run measured the most of (by weight), and names in one line what the other profiles
would choose, or that this run says nothing about them."""
from __future__ import annotations

from markupsafe import escape

from fslab.report.figures import FigureContext, Section
from fslab.recommend import BUILTIN, load, recommend
from fslab.recommend.evidence import gather
from fslab.recommend.render import first_text, html
from fslab.store import Store

PLACE = "lead"


def sections(ctx: FigureContext) -> list[Section]:
    if ctx.results_root is None or ctx.data.empty or "run_id" not in ctx.data:
        return []
    runs = sorted(ctx.data["run_id"].unique())
    if len(runs) != 1:   # a recommendation decides within one run's rounds
        return [Section("Recommendation", "<p>Recommendations are made per run: use "
                        f"<code>fslab recommend RUN_ID</code> for one of {escape(', '.join(runs))}.</p>")]
    asked = [load(p) for p in ctx.priorities or []]
    store = Store(ctx.results_root)
    try:
        ev = gather(store, runs[0], known=ctx.analysis)
        recs = [recommend(ev, p) for p in (asked or BUILTIN.values())]
    finally:
        store.close()
    how = ("`fslab report --priorities NAME|file.toml` (built in: " + ", ".join(BUILTIN)
           + ") or `fslab recommend RUN --priorities ...` for other weights. ")
    if asked:
        body = "".join(f"<h3>Priorities: {escape(r.priorities.name)}</h3>{html(r)}" for r in recs)
        return [Section("Recommendation", body, "Scored from this run's measured verdicts only; "
                        "features are shown as capabilities, never scored. " + how)]
    decided = [r for r in recs if r.first is not None]
    if not decided:
        names = ", ".join(r.priorities.name for r in recs)
        return [Section("Recommendation", f"<p>Nothing this run measured bears on the built-in "
                        f"priorities ({escape(names)}).</p>", how)]
    # the profile most of whose weight this run measured: its answer is the best founded
    shown = max(decided, key=lambda r: (r.weights()[0] / r.weights()[1], r.weights()[0]))
    measured, total = shown.weights()
    others = [r for r in recs if r is not shown]
    said = "; ".join(f"{r.priorities.name}: {first_text(r)}" for r in others if r.first is not None)
    silent = [r.priorities.name for r in others if r.first is None]
    tail = ""
    if said:
        tail += f"<p class=\"note\">Other built-in priorities: {escape(said)}.</p>"
    if silent:
        tail += (f"<p class=\"note\">Nothing this run measured bears on {escape(', '.join(silent))}."
                 "</p>")
    head = (f"<p>Priorities <b>{escape(shown.priorities.name)}</b> "
            f"({escape(shown.priorities.description)}): the built-in profile this run measured "
            f"the most of ({measured:g} of its weight {total:g}); none was asked for.</p>")
    return [Section("Recommendation", head + html(shown) + tail,
                    "Scored from this run's measured verdicts only; features are shown as "
                    "capabilities, never scored. " + how)]
