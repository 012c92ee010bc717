"""One plain-language paragraph, like the studies' conclusions, generated from the numbers."""
from __future__ import annotations

import math

from fslab.analysis.pairwise import format_p
from fslab.recommend.score import CriterionResult, Recommendation


def paragraph(rec: Recommendation) -> str:
    ranked = [r for r in rec.ranking if not math.isnan(r.score)]
    if not ranked:
        return (f"No evidence in run {rec.run_id} bears on the {rec.priorities.name} priorities: "
                + _absent(rec) + ".")
    top = ranked[0]
    leaders = [top.level, *top.tied_with]
    if len(leaders) == len(ranked):
        head = (f"For {rec.priorities.name} priorities the evidence does not separate "
                f"{_join(leaders)} (all score {top.score:.0f}/100).")
    else:
        rest = ", ".join(f"{r.level} {r.score:.0f}" for r in ranked if r.level not in leaders)
        who = (f"{top.level} ranks first" if not top.tied_with else
               f"{_join(leaders)} share first place")
        head = f"For {rec.priorities.name} priorities {who} ({top.score:.0f}/100; then {rest})."
    return " ".join(s for s in (head, _deciding(rec, leaders), _ties(rec), _absent_sentence(rec)) if s)


def _deciding(rec: Recommendation, leaders: list[str]) -> str:
    """The criteria that moved the scores most, each with its strongest evidence."""
    spread = []
    for c in rec.criteria:
        if len(c.scores) >= 2:
            vals = list(c.scores.values())
            spread.append((c.criterion.weight * (max(vals) - min(vals)), c))
    spread = [x for x in sorted(spread, key=lambda x: -x[0]) if x[0] > 0][:3]
    if not spread:
        return ""
    return "It rests on " + "; ".join(_criterion_sentence(c) for _, c in spread) + "."


def _criterion_sentence(c: CriterionResult) -> str:
    label = c.criterion.label
    if c.criterion.kind == "feature":
        works = [p["level"] for p in c.points if p["value"] == 1.0]
        part = [p["level"] for p in c.points if p["value"] == 0.5]
        none = [p["level"] for p in c.points if p["value"] == 0.0]
        probed = sum(p["records"] is not None for p in c.points)
        source = ("probed here" if probed == len(c.points) else
                  "from documentation only" if not probed else "partly from documentation")
        bits = []
        if works:
            bits.append(f"{_join(works)} {'have' if len(works) > 1 else 'has'} it")
        if part:
            bits.append(f"{_join(part)} in part")
        if none:
            bits.append(f"{_join(none)} not")
        return f"{label} ({', '.join(bits)}; {source})"
    best = max(c.points, key=lambda p: (abs(p["delta"]), -p["p_holm"]))
    return f"{label} ({_verdict_text(best)}" + (
        f", {len(c.points) - 1} more significant verdict(s)" if len(c.points) > 1 else "") + ")"


def _verdict_text(p: dict) -> str:
    ratio = p["ratio"]
    if ratio and not math.isnan(ratio) and (ratio >= 2 or ratio <= 0.5):
        size = f"{ratio:.1f}x higher" if ratio > 1 else f"{1 / ratio:.1f}x lower"
    elif ratio and not math.isnan(ratio) and ratio != 1:
        size = f"{abs(ratio - 1) * 100:.0f}% {'higher' if ratio > 1 else 'lower'}"
    else:
        size = "better"
    where = f"{p['suite']}:{p['case']}"
    return (f"{p['winner']} had {size} {p['metric']} than {p['loser']} in {where}, "
            f"{format_p(p['p_holm'])}, |δ|={p['delta']:.2f} {p['magnitude']}")


def _ties(rec: Recommendation) -> str:
    tied = [c for c in rec.criteria if c.criterion.kind == "measured" and c.status == "evidence"
            and not c.points and c.ties]
    if not tied:
        return ""
    labels = _join([c.criterion.label for c in tied])
    notes = {c.strongest_tie["note"] for c in tied if c.strongest_tie and c.strongest_tie["note"]}
    why = f" — {sorted(notes)[0]} —" if notes else ""
    return f"Differences in {labels} were not significant{why}, so they count as ties."


def _absent(rec: Recommendation) -> str:
    gone = [c for c in rec.criteria if c.status in ("absent", "one level")]
    return "; ".join(f"{c.criterion.label} ({c.criterion.where()})" for c in gone)


def _absent_sentence(rec: Recommendation) -> str:
    text = _absent(rec)
    return f"Not in this run, so not weighed: {text}." if text else ""


def _join(items: list[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
