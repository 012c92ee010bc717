"""One plain-language paragraph, like the studies' conclusions, generated from the numbers."""
from __future__ import annotations

import math

from fslab.analysis.pairwise import format_p
from fslab.recommend.score import COUNTED, ONE_LEVEL, CriterionResult, Recommendation


def paragraph(rec: Recommendation) -> str:
    return " ".join(s for s in (_head(rec), _coverage(rec), _deciding(rec), _ties(rec),
                                _absent_sentence(rec), _capabilities_sentence(rec)) if s)


def _head(rec: Recommendation) -> str:
    name = rec.priorities.name
    first = rec.first
    if first is None and any(c.status == ONE_LEVEL for c in rec.criteria):
        return (f"No winner for {name} priorities: what run {rec.run_id} measured for them "
                f"has records of one filesystem only, so nothing was compared.")
    if first is None:
        return (f"No winner for {name} priorities: nothing run {rec.run_id} measured bears on "
                f"them, and documented or probed features alone do not decide a ranking.")
    ranked = [r for r in rec.ranking if not math.isnan(r.score)]
    top = ranked[0]
    if len(first) == len(ranked):
        return (f"For {name} priorities the measurements do not separate "
                f"{_join(first)} (all score {top.score:.0f}/100).")
    rest = ", ".join(f"{r.level} {r.score:.0f}" for r in ranked if r.level not in first)
    who = f"{top.level} ranks first" if len(first) == 1 else f"{_join(first)} share first place"
    return f"For {name} priorities {who} ({top.score:.0f}/100; then {rest})."


def _coverage(rec: Recommendation) -> str:
    """How much of the profile the measured criteria carry, when it is not all of it."""
    measured, total = rec.weights()
    if not rec.measured or measured == total:
        return ""
    labels = _join([c.criterion.label for c in rec.measured])
    return (f"Only {labels} {'was' if len(rec.measured) == 1 else 'were'} measured: "
            f"weight {measured:g} of the profile's {total:g}.")


def _deciding(rec: Recommendation) -> str:
    """The measured criteria that moved the scores most, each with its strongest evidence."""
    spread = []
    for c in rec.measured:
        if len(c.scores) >= 2 and c.points:
            vals = list(c.scores.values())
            spread.append((c.criterion.weight * (max(vals) - min(vals)), c))
    spread = [x for x in sorted(spread, key=lambda x: -x[0]) if x[0] > 0][:3]
    if not spread:
        return ""
    return "It rests on " + "; ".join(_criterion_sentence(c) for _, c in spread) + "."


def _criterion_sentence(c: CriterionResult) -> str:
    best = strongest(c.points)
    return f"{c.criterion.label} ({_verdict_text(best)}" + (
        f", {len(c.points) - 1} more significant verdict(s)" if len(c.points) > 1 else "") + ")"


def _verdict_text(p: dict) -> str:
    where = f"{p['suite']}:{p['case']}"
    return (f"{p['winner']} had {size_text(p['ratio'])} {p['metric']} than {p['loser']} in {where}, "
            f"{format_p(p['p_holm'])}, |Cliff's δ|={p['delta']:.2f} {p['magnitude']}")


def size_text(ratio: float) -> str:
    """A ratio of medians in words: '19x higher', '250x lower', '5% higher'."""
    if not ratio or math.isnan(ratio) or ratio == 1:
        return "better"
    if ratio >= 2 or ratio <= 0.5:
        factor = ratio if ratio > 1 else 1 / ratio
        size = f"{factor:,.0f}x" if factor >= 100 else f"{factor:.1f}x"
        return f"{size} {'higher' if ratio > 1 else 'lower'}"
    return f"{abs(ratio - 1) * 100:.0f}% {'higher' if ratio > 1 else 'lower'}"


def strongest(points: list[dict]) -> dict:
    """The most telling point: the largest effect, then the largest ratio, then the smallest p."""
    def key(p):
        r = p["ratio"]
        spread = abs(math.log(r)) if r and r > 0 and not math.isnan(r) else 0.0
        return (round(abs(p["delta"]), 6), spread, -p["p_holm"])
    return max(points, key=key)


def _ties(rec: Recommendation) -> str:
    tied = [c for c in rec.measured if not c.points and c.ties]
    if not tied:
        return ""
    labels = _join([c.criterion.label for c in tied])
    notes = {c.strongest_tie["note"] for c in tied if c.strongest_tie and c.strongest_tie["note"]}
    why = f" — {sorted(notes)[0]} —" if notes else ""
    return f"Differences in {labels} were not significant{why}, so they count as ties."


def _absent_sentence(rec: Recommendation) -> str:
    gone = [f"{c.criterion.label} ({c.not_measured.removeprefix('not measured: ')})"
            for c in rec.unmeasured]
    counted = [c.criterion.label for c in rec.criteria if c.status == COUNTED]
    parts = []
    if gone:
        parts.append(f"Not measured, so not weighed: {'; '.join(gone)}.")
    if counted:
        parts.append(f"{_join(counted)}: already counted under an earlier criterion.")
    return " ".join(parts)


def _capabilities_sentence(rec: Recommendation) -> str:
    """Features with their weight, said to be stated capabilities, never scored."""
    bits = []
    for c in rec.capabilities:
        have = [p["level"] + (" in part" if p["value"] < 1 else "") for p in c.points if p["value"] > 0]
        if not c.points:
            continue
        probed = sum(p["probed"] for p in c.points)
        source = ("probed here" if probed == len(c.points) else
                  "documented, not probed" if not probed else "partly probed, partly documented")
        who = _join(have) if have else "none of them"
        bits.append(f"{c.criterion.label} ×{c.criterion.weight:g}: {who} ({source})")
    if not bits:
        return ""
    return "Stated capabilities, shown but not scored: " + "; ".join(bits) + "."


def _join(items: list[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
