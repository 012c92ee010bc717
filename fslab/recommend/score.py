"""Score filesystems against weighted criteria, every point tied to its evidence.

Measured criterion: each significant pairwise verdict (Holm-corrected, from
fslab.analysis) gives its winner +1 and its loser -1; a filesystem's criterion
score is 0.5 + (wins - losses) / (2 x comparisons it took part in), so 0.5 means
"no significant difference from anyone" and non-significant differences are ties.
Feature criterion: 1 if the feature works (probe), 0 if it failed or is absent,
the documented claim (yes 1, partial 0.5, no 0) when no probe could tell.
Total: the weighted mean over the criteria with evidence, scaled to 0-100.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field


from fslab.analysis import is_detail
from fslab.features.matrix import Cell
from fslab.recommend.evidence import Evidence
from fslab.recommend.priorities import Criterion, Priorities

TIE = 0.5      # points on the 0-100 scale below which two totals are the same rank


@dataclass
class CriterionResult:
    criterion: Criterion
    status: str                          # evidence | absent | one level
    scores: dict[str, float] = field(default_factory=dict)
    points: list[dict] = field(default_factory=list)     # significant verdicts / feature cells
    ties: int = 0                        # comparisons without a significant difference
    strongest_tie: dict | None = None    # the largest effect that did not reach significance
    groups: int = 0                      # measured quantities that matched
    missing: list[str] = field(default_factory=list)     # levels without evidence here

    def as_dict(self) -> dict:
        return {"label": self.criterion.label, "weight": self.criterion.weight,
                "kind": self.criterion.kind, "where": self.criterion.where(), "why": self.criterion.why,
                "status": self.status, "scores": self.scores, "points": self.points,
                "ties": self.ties, "strongest_tie": self.strongest_tie, "groups": self.groups,
                "missing": self.missing}


@dataclass
class Ranked:
    rank: int
    level: str
    score: float
    tied_with: list[str]


@dataclass
class Recommendation:
    run_id: str
    priorities: Priorities
    levels: list[str]
    criteria: list[CriterionResult]
    ranking: list[Ranked]
    features_run: str | None
    paragraph: str = ""

    def as_dict(self) -> dict:
        return {"run_id": self.run_id, "priorities": self.priorities.model_dump(),
                "levels": self.levels, "features_run": self.features_run,
                "ranking": [r.__dict__ for r in self.ranking],
                "criteria": [c.as_dict() for c in self.criteria], "paragraph": self.paragraph}


def recommend(ev: Evidence, pri: Priorities) -> Recommendation:
    levels = list(ev.analysis.levels)
    results = [_measured(ev, c, levels) if c.kind == "measured" else _feature(ev, c, levels)
               for c in pri.criterion]
    totals = {}
    for lv in levels:
        used = [(r.criterion.weight, r.scores[lv]) for r in results if lv in r.scores]
        totals[lv] = 100 * sum(w * s for w, s in used) / sum(w for w, _ in used) if used else math.nan
    rec = Recommendation(ev.run_id, pri, levels, results, _rank(totals), ev.features_run)
    from fslab.recommend.explain import paragraph
    rec.paragraph = paragraph(rec)
    return rec


def _rank(totals: dict[str, float]) -> list[Ranked]:
    order = sorted(totals, key=lambda lv: (math.isnan(totals[lv]), -totals[lv]
                                           if not math.isnan(totals[lv]) else 0, lv))
    out: list[Ranked] = []
    for i, lv in enumerate(order):
        s = totals[lv]
        tied = [o for o in order if o != lv and abs(totals[o] - s) < TIE]
        rank = next((r.rank for r in out if r.level in tied), i + 1)
        out.append(Ranked(rank, lv, round(s, 1) if not math.isnan(s) else s, tied))
    return out


def _measured(ev: Evidence, c: Criterion, levels: list[str]) -> CriterionResult:
    a = ev.analysis
    s = a.summary
    hit = s[[c.matches(su, ca, me) and (not is_detail(me) or me in c.metric)
             for su, ca, me in zip(s["suite"], s["case"], s["metric"])]]
    hit = hit[hit["better"].isin(["higher", "lower"])]
    res = CriterionResult(c, "evidence")
    if hit.empty:
        res.status = "absent"
        res.missing = list(levels)
        return res
    groups = hit.groupby([k for k in a.keys if k != "unit"], sort=True, dropna=False)
    res.groups = groups.ngroups
    present = set(hit["level"])
    res.missing = [lv for lv in levels if lv not in present]
    if len(present) < 2:
        res.status = "one level"
        return res
    p = a.pairs
    rows = p[[c.matches(su, ca, me) for su, ca, me in zip(p["suite"], p["case"], p["metric"])]]
    rows = rows[rows["metric"].isin(set(hit["metric"]))]
    wins = {lv: 0 for lv in present}
    comps = {lv: 0 for lv in present}
    for r in rows.to_dict("records"):
        comps[r["baseline"]] += 1
        comps[r["other"]] += 1
        if r["significant"] and r["winner"]:
            loser = r["other"] if r["winner"] == r["baseline"] else r["baseline"]
            wins[r["winner"]] += 1
            wins[loser] -= 1
            res.points.append(_point(r, loser, ev.run_id))
        else:
            res.ties += 1
            if not math.isnan(r["delta"]) and (res.strongest_tie is None or
                                               abs(r["delta"]) > abs(res.strongest_tie["delta"])):
                res.strongest_tie = _point(r, None, ev.run_id)
    res.scores = {lv: 0.5 + wins[lv] / (2 * comps[lv]) for lv in present if comps[lv]}
    return res


def _point(r: dict, loser: str | None, run_id: str) -> dict:
    """One pairwise verdict, stated from the winner's side, with where its records are."""
    winner = r.get("winner") or (r["other"] if _ahead(r, r["other"]) else r["baseline"])
    loser = loser or (r["baseline"] if winner == r["other"] else r["other"])
    med_w = r["median_other"] if winner == r["other"] else r["median_baseline"]
    med_l = r["median_baseline"] if winner == r["other"] else r["median_other"]
    ratio = med_w / med_l if med_l else math.nan
    return {"winner": winner, "loser": loser, "suite": r["suite"], "case": r["case"],
            "params": r["params"], "metric": r["metric"], "unit": r["unit"], "better": r["better"],
            "median_winner": med_w, "median_loser": med_l, "ratio": ratio,
            # |Cliff's delta|: the direction is already in winner/loser
            "p_holm": r["p_holm"], "delta": abs(r["delta"]), "magnitude": r["magnitude"],
            "test": r["test"], "n": int(min(r["n_baseline"], r["n_other"])),
            "significant": bool(r["significant"]), "note": r.get("note", ""),
            "records": {"run_id": run_id, "suite": r["suite"], "case": r["case"],
                        "params": r["params"], "metric": r["metric"], "levels": [winner, loser]}}


def _ahead(r: dict, level: str) -> bool:
    """Is `level` ahead on the medians (used only to describe a tie's direction)?"""
    other_higher = r["median_other"] > r["median_baseline"]
    return (level == r["other"]) == (other_higher == (r["better"] == "higher"))


def _feature(ev: Evidence, c: Criterion, levels: list[str]) -> CriterionResult:
    res = CriterionResult(c, "evidence")
    for lv in levels:
        cell = ev.matrix.cell(lv, c.feature)
        value, basis = feature_value(cell)
        if value is None:
            res.missing.append(lv)
            continue
        res.scores[lv] = value
        p = cell.probe
        res.points.append({"level": lv, "feature": c.feature, "value": value, "basis": basis,
                           "status": cell.status, "claim": cell.claim.as_dict(),
                           "detail": p.detail if p else cell.claim.note,
                           "records": ({"run_id": p.run_id, "suite": "features", "case": c.feature,
                                        "metric": "verified", "artifacts": p.artifacts}
                                       if p else None)})
    if not res.scores:
        res.status = "absent"
    return res


def feature_value(cell: Cell) -> tuple[float | None, str]:
    """(value, basis): a probe outcome when it decided, else the documented claim."""
    partial = cell.claim.status == "partial"
    if cell.works is not None:
        return (0.5 if partial else 1.0) if cell.works else 0.0, (
            "verified here" if cell.works else "failed here" if cell.claimed else "absent (probed)")
    value = {"yes": 1.0, "partial": 0.5, "no": 0.0}.get(cell.claim.status)
    return value, "documented claim, not verified in this run"
