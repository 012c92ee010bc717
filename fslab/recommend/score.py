"""Score filesystems against weighted criteria, every point tied to its evidence.

Only measured criteria score, from the ranking of fslab.analysis (Holm-corrected
pairwise tests: two filesystems are apart only when their own test says so). Each (job,
measure) counts once (fslab.recommend.measures: IOPS and bandwidth of a job are one
measure). On it, a filesystem scores as its peer, the best-ranked filesystem no test
separates it from: 1 when that is the best, else the peer's ratio to the best (inverted
for lower-is-better metrics: 3x the best latency scores 1/3). So a filesystem the tests
cannot tell from a better one scores as that one, 0.98x of the best counts almost as
much as the best, and 0.014x counts almost nothing. A best of 0 (0 silently corrupted
blocks) still scores 1; behind it a ratio is infinite, so a separated filesystem scores
0, its limit. Counts of trials compared pooled (8 of 8 damaged blocks returned silently,
fslab/analysis/counts.py) score 1 minus the rate difference of their peer to the best:
3 of 8 silent behind 0 of 8 scores 0.625. A
criterion's score is the mean over its measures; the total is the weighted mean over
the measured criteria, 0-100.

Feature criteria (documented claims, or probes of them) are stated capabilities: shown
next to the measured criteria with their weight, never added to a score, so a ranking
never rests on documentation. A profile none of whose measured criteria has evidence
in the run has no winner (`first` is None).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from fnmatch import fnmatchcase

from fslab.metrics import is_detail
from fslab.analysis.counts import DESIGN
from fslab.features.matrix import Cell
from fslab.recommend.evidence import Evidence
from fslab.recommend.measures import SUMS, case_names, measure_of, scored
from fslab.recommend.priorities import Criterion, Priorities

TIE = 0.5      # points on the 0-100 scale below which two totals are the same rank
MEASURED, NOT_MEASURED, ONE_LEVEL, CAPABILITY = "measured", "not measured", "one level", "capability"
COUNTED = "counted before"    # its quantities all scored under an earlier criterion of the profile


@dataclass
class CriterionResult:
    criterion: Criterion
    status: str                          # measured | not measured | one level | capability | counted before
    scores: dict[str, float] = field(default_factory=dict)   # measured criteria only
    points: list[dict] = field(default_factory=list)     # significant votes / capability cells
    ties: int = 0                        # votes without a significant difference
    strongest_tie: dict | None = None    # the largest effect that did not reach significance
    groups: int = 0                      # (job, measure) quantities counted here
    counted_before: int = 0              # quantities already counted under an earlier criterion
    missing: list[str] = field(default_factory=list)     # levels without evidence here
    suite_ran: bool = False              # not measured although its suite ran (no such metric)

    @property
    def not_measured(self) -> str | None:
        """'not measured: run `--suite X` to answer it', when the run left this open."""
        if self.status == NOT_MEASURED and self.suite_ran:
            c = self.criterion
            return (f"not measured: this run's {c.suite} records have no {'/'.join(c.metric)}; "
                    f"{c.how_to_measure().replace(' to answer', ' again to answer')}")
        if self.status == NOT_MEASURED:
            return f"not measured: {self.criterion.how_to_measure()}"
        if self.status == ONE_LEVEL:
            return "only one filesystem measured: nothing to compare"
        return None

    def as_dict(self) -> dict:
        return {"label": self.criterion.label, "weight": self.criterion.weight,
                "kind": self.criterion.kind, "where": self.criterion.where(), "why": self.criterion.why,
                "status": self.status, "scored": self.status == MEASURED,
                "scores": self.scores, "points": self.points,
                "ties": self.ties, "strongest_tie": self.strongest_tie, "groups": self.groups,
                "counted_before": self.counted_before, "missing": self.missing,
                "not_measured": self.not_measured}


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

    @property
    def measured(self) -> list[CriterionResult]:
        return [c for c in self.criteria if c.status == MEASURED]

    @property
    def capabilities(self) -> list[CriterionResult]:
        return [c for c in self.criteria if c.criterion.kind == "feature"]

    @property
    def unmeasured(self) -> list[CriterionResult]:
        return [c for c in self.criteria if c.status in (NOT_MEASURED, ONE_LEVEL)]

    @property
    def first(self) -> list[str] | None:
        """The filesystems sharing first place; None when nothing measured decides."""
        ranked = [r for r in self.ranking if not math.isnan(r.score)]
        if not self.measured or not ranked:
            return None
        return [ranked[0].level, *ranked[0].tied_with]

    def weights(self) -> tuple[float, float]:
        """(weight of the criteria measured here, weight of the whole profile)."""
        return (sum(c.criterion.weight for c in self.measured),
                sum(c.criterion.weight for c in self.criteria))

    def as_dict(self) -> dict:
        """The `recommend --json` shape (README): priorities, first, ranking, not_measured,
        then the capabilities and every criterion with its evidence."""
        measured, total = self.weights()
        return {"priorities": self.priorities.name, "first": self.first,
                "ranking": [{**r.__dict__, "score": r.score} if not math.isnan(r.score) else
                            {**r.__dict__, "rank": None, "score": None, "tied_with": []}
                            for r in self.ranking],
                "not_measured": [{"criterion": c.criterion.label, "weight": c.criterion.weight,
                                  "suite": c.criterion.suite_to_run(), "message": c.not_measured}
                                 for c in self.unmeasured],
                "capabilities": [{"criterion": c.criterion.label, "feature": c.criterion.feature,
                                  "weight": c.criterion.weight, "scored": False, "levels": c.points}
                                 for c in self.capabilities],
                "measured_weight": measured, "profile_weight": total,
                "run_id": self.run_id, "profile": self.priorities.model_dump(),
                "levels": self.levels, "features_run": self.features_run,
                "criteria": [c.as_dict() for c in self.criteria], "paragraph": self.paragraph}


def score(ev: Evidence, pri: Priorities) -> Recommendation:
    """Every criterion scored and the levels ranked; the paragraph is written by explain.py."""
    levels = list(ev.analysis.levels)
    counted: set[tuple] = set()      # (job, measure) quantities scored by an earlier criterion
    results = [_measured(ev, c, levels, counted) if c.kind == "measured" else _feature(ev, c, levels)
               for c in pri.criterion]
    totals = {}
    for lv in levels:
        used = [(r.criterion.weight, r.scores[lv]) for r in results
                if r.status == MEASURED and lv in r.scores]
        totals[lv] = 100 * sum(w * s for w, s in used) / sum(w for w, _ in used) if used else math.nan
    return Recommendation(ev.run_id, pri, levels, results, _rank(totals), ev.features_run)


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


def _wanted(c: Criterion, suite: str, cases: tuple[str, ...], metric: str) -> bool:
    """A scored metric this criterion asks for; tail statistics (p99, max) only when a
    pattern names them (a bare '*' means the headline metrics). `cases`: the case's names
    (a job file's job also by its declared rw=: measures.case_names)."""
    if not (any(c.matches(suite, case, metric) for case in cases) and scored(metric)):
        return False
    return not is_detail(metric) or any(fnmatchcase(metric, m) and is_detail(m) for m in c.metric)


def _measured(ev: Evidence, c: Criterion, levels: list[str], counted: set[tuple]) -> CriterionResult:
    a = ev.analysis
    s = a.summary
    names = [case_names(ca, pa) for ca, pa in zip(s["case"], s.get("params", [None] * len(s)))]
    hit = s[[_wanted(c, su, ns, me) for su, ns, me in zip(s["suite"], names, s["metric"])]]
    hit = hit[hit["better"].isin(["higher", "lower"])]
    res = CriterionResult(c, MEASURED)
    if hit.empty:
        res.status = NOT_MEASURED
        res.missing = list(levels)
        res.suite_ran = any(fnmatchcase(su, c.suite) and any(fnmatchcase(n, c.case) for n in ns)
                            for su, ns in zip(s["suite"], names))
        return res
    present = set(hit["level"])
    res.missing = [lv for lv in levels if lv not in present]
    if len(present) < 2:
        res.status = ONE_LEVEL
        return res
    keys = [k for k in a.keys if k in hit.columns]
    groups = set(hit[keys].itertuples(index=False, name=None))
    tiers = a.tiers
    if tiers.empty:
        res.status = ONE_LEVEL
        return res
    tiers = tiers[[g in groups for g in tiers[keys].itertuples(index=False, name=None)]]
    by_quantity: dict[tuple, list[dict]] = {}
    for t in tiers.to_dict("records"):
        by_quantity.setdefault(_quantity(t), []).append(t)
    res.counted_before = len(set(by_quantity) & counted)
    res.groups = len(set(by_quantity) - counted)
    pair_rows = {(_quantity(r), r["metric"], frozenset((r["baseline"], r["other"]))): r
                 for r in a.pairs[a.pairs["metric"].isin(set(hit["metric"]))].to_dict("records")}
    goodness: dict[str, list[float]] = {lv: [] for lv in present}
    for quantity, rows_of_measure in by_quantity.items():
        if quantity in counted:
            continue
        # one metric speaks for the measure: a sum for its parts, else the first by name
        # (IOPS and bandwidth of one job give the same ratios)
        t = min(rows_of_measure, key=lambda r: (r["metric"] not in SUMS, r["metric"]))
        metrics = sorted({r["metric"] for r in rows_of_measure})
        info = t["levels_info"]
        best = t["order"][0]
        for lv, d in info.items():
            if lv in goodness:     # a level the tests cannot tell from a better one scores as it
                peer = d["peer"]
                goodness[lv].append(1.0 if peer == best else _goodness(
                    info[peer]["ratio_to_best"], t["better"],
                    pair_rows.get((quantity, t["metric"], frozenset((best, peer))))))
        if t["one_tier"]:
            res.ties += 1
            rows = [r for (q, _, _), r in pair_rows.items() if q == quantity and not math.isnan(r["delta"])]
            if rows:
                r = max(rows, key=lambda r: abs(r["delta"]))
                if res.strongest_tie is None or abs(r["delta"]) > res.strongest_tie["delta"]:
                    res.strongest_tie = _point(r, None, ev.run_id, metrics)
            continue
        for lv, d in info.items():
            if d["separated_from_best"]:
                r = pair_rows.get((quantity, t["metric"], frozenset((best, lv))))
                if r is not None:
                    res.points.append(_point(r, lv, ev.run_id, metrics, winner=best))
    counted |= set(by_quantity)
    if not any(goodness.values()):    # every quantity was already counted by an earlier criterion
        res.status = COUNTED
        return res
    res.scores = {lv: sum(g) / len(g) for lv, g in goodness.items() if g}
    return res


def _goodness(ratio_to_best: float, better: str, pair: dict | None = None) -> float:
    """How close a lower tier's leader is to the best, in [0, 1]: a median ratio for 'higher',
    its inverse for 'lower' (3x the best latency scores 1/3); 0 behind a best of 0 (the
    ratio is infinite). Pooled counts of trials (`pair` of the best and the leader):
    1 minus the difference of their rates."""
    if pair is not None and pair.get("design") == DESIGN:
        return max(0.0, 1.0 - abs(pair["median_other"] - pair["median_baseline"]))
    if ratio_to_best is None or not math.isfinite(ratio_to_best) or ratio_to_best <= 0:
        return 0.0
    return min(1.0, ratio_to_best if better == "higher" else 1 / ratio_to_best)


def _quantity(r: dict) -> tuple:
    """One job's one measure: the unit of a vote."""
    return (r.get("run_id"), r.get("host"), r["suite"], r["case"], r["params"], measure_of(r["metric"]))


def _point(r: dict, loser: str | None, run_id: str, metrics: list[str],
           winner: str | None = None) -> dict:
    """One tier step (or the closest tie), stated from the better side, with where its
    records are."""
    winner = winner or r.get("winner") or (r["other"] if _ahead(r, r["other"]) else r["baseline"])
    loser = loser or (r["baseline"] if winner == r["other"] else r["other"])
    med_w = r["median_other"] if winner == r["other"] else r["median_baseline"]
    med_l = r["median_baseline"] if winner == r["other"] else r["median_other"]
    ratio = med_w / med_l if med_l else math.nan
    return {"winner": winner, "loser": loser, "suite": r["suite"], "case": r["case"],
            "params": r["params"], "metric": r["metric"], "measure": measure_of(r["metric"]),
            "unit": r["unit"], "better": r["better"],
            "median_winner": med_w, "median_loser": med_l, "ratio": ratio,
            # |Cliff's delta|: the direction is already in winner/loser
            "p_holm": r["p_holm"], "delta": abs(r["delta"]), "magnitude": r["magnitude"],
            "test": r["test"], "n": int(min(r["n_baseline"], r["n_other"])),
            "design": r.get("design") if isinstance(r.get("design"), str) else None,
            "significant": bool(r["significant"]), "note": r.get("note", ""),
            "records": {"run_id": run_id, "suite": r["suite"], "case": r["case"],
                        "params": r["params"], "metric": r["metric"], "metrics": metrics,
                        "levels": [winner, loser]}}


def _ahead(r: dict, level: str) -> bool:
    """Is `level` ahead on the medians (used only to describe a tie's direction)?"""
    other_higher = r["median_other"] > r["median_baseline"]
    return (level == r["other"]) == (other_higher == (r["better"] == "higher"))


def _feature(ev: Evidence, c: Criterion, levels: list[str]) -> CriterionResult:
    """A stated capability per filesystem: shown with its weight and basis, never scored."""
    res = CriterionResult(c, CAPABILITY)
    for lv in levels:
        cell = ev.matrix.cell(lv, c.feature)
        value, basis = feature_value(cell)
        if value is None:
            res.missing.append(lv)
            continue
        p = cell.probe
        res.points.append({"level": lv, "feature": c.feature, "value": value, "basis": basis,
                           "probed": p is not None and cell.works is not None,
                           "status": cell.status, "claim": cell.feature_claim.as_dict(),
                           "detail": p.detail if p else cell.feature_claim.note,
                           "records": ({"run_id": p.run_id, "suite": "features", "case": c.feature,
                                        "metric": "verified", "artifacts": p.artifacts}
                                       if p else None)})
    return res


def feature_value(cell: Cell) -> tuple[float | None, str]:
    """(value, basis): a probe outcome when it decided, else the documented claim."""
    partial = cell.feature_claim.status == "partial"
    if cell.works is not None:
        return (0.5 if partial else 1.0) if cell.works else 0.0, (
            "verified here" if cell.works else "failed here" if cell.claimed else "absent (probed)")
    value = {"yes": 1.0, "partial": 0.5, "no": 0.0}.get(cell.feature_claim.status)
    return value, "documented claim, not verified in this run"
