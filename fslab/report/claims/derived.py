"""S2's claims, re-derived from this run's records. The notebook tested whether the four
filesystems differ per metric (one-way ANOVA, Kruskal-Wallis when its assumptions fail) and
ext4 vs btrfs (paired Wilcoxon), all workloads pooled, and found a split: the filesystems
differ on writes (Kruskal-Wallis H = 37.27, 12.94, 42.14) and do not on reads (p = 0.4850,
0.8871, 0.5364). Here each side is tested per workload (pooling IOPS of different jobs mixes
their scales: one of the notebook's mistakes) with the answer's own tests. "Writes differ"
holds when the test separates the filesystems; "reads do not" is an absence: it holds only
when no test separates them *and* this run could have seen a difference of `absence_within`
(the run's smallest detectable difference, fslab.decide.posterior.detectable, at or below
it); otherwise it is undecided and the reason says how many rounds would decide."""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from fslab.analysis.omnibus import omnibus
from fslab.decide.posterior import detectable
from fslab.metrics import label as metric_label
from fslab.report.claims.judge import (
    HOLDS, NO_DIFFERENCE, NOT_MEASURED, NOT_REPRODUCED, UNDECIDED, fmt, more_rounds, series)
from fslab.report.claims.kinds import qualify
from fslab.report.claims.stats import ALPHA, floor_words, holm, pair_test, rounds_to_decide
from fslab.store.environment import RunEnvironment

MAX_ROUNDS = 200     # the projection of the rounds an absence needs stops here


@dataclass(frozen=True)
class Side:
    """One side of the notebook's split: its workloads' metrics, whether the filesystems
    differ on it (writes) or not (reads), and the statistics the notebook published."""
    name: str                          # "writes" | "reads"
    differ: bool
    workloads: dict[str, list[str]]
    published: str
    published_pair: str


def s2_rows(spec: dict, recs: pd.DataFrame, env: RunEnvironment | dict | None = None) -> list[dict]:
    """Per side and workload, whether the filesystems differ and their order; ext4 vs btrfs
    per side. Each qualified as the other claims are (zfs-fuse: not comparable; the profile
    and a TCG guest said)."""
    env = RunEnvironment.of(env or {})
    study = spec["study"]
    derived = spec.get("derived") or {}
    within = float(derived.get("absence_within", 0.10))
    fio = recs[recs["suite"] == spec.get("suite", "fio")]
    levels = sorted(set(fio["label"]))
    a, b = derived.get("pair") or ("ext4", "btrfs")
    rows = []
    for side in sides(derived):
        for workload, metrics in side.workloads.items():
            for metric in metrics:
                r = _ordering(study, side, workload, metric, fio[fio["case"] == workload], levels, within)
                rows.append((r, levels))
        rows.append((_pair(study, side, a, b, fio, within), [a, b]))
    for r, labels in rows:
        r["verdict"], r["why"] = qualify(r["verdict"], r["why"], env, labels)
    return [r for r, _ in rows]


def sides(derived: dict) -> list[Side]:
    published = derived.get("published") or {}
    return [Side(name, name == "writes", derived.get(name) or {}, published.get(name, ""),
                 published.get(f"pair_{name}", "")) for name in ("writes", "reads")]


def _row(study: str, claim: str, published: str, measured: str, verdict: str, why: str) -> dict:
    return {"study": study, "claim": claim, "published": published, "measured": measured,
            "verdict": verdict, "why": why}


def _ordering(study: str, side: Side, workload: str, metric: str, g: pd.DataFrame,
              levels: list[str], within: float) -> dict:
    label = metric_label(metric)
    claim = (f"{workload}: the filesystems differ in {label} (writes differ)" if side.differ else
             f"{workload}: the filesystems do not differ in {label} (reads do not)")
    samples = {lv: series(g, lv, metric) for lv in levels}
    samples = {lv: v for lv, v in samples.items() if not v.empty}
    if len(samples) < 2:
        return _row(study, claim, side.published, "–", NOT_MEASURED,
                    f"no {label} of {workload} for two filesystems in this run")
    unit = str(g.loc[g["metric"] == metric, "unit"].iloc[0])
    better = str(g.loc[g["metric"] == metric, "better"].iloc[0] or "higher")
    order = sorted(samples, key=lambda lv: samples[lv].median(), reverse=(better == "higher"))
    separated = _separated(samples)
    parts = [f"{order[0]} {fmt(float(samples[order[0]].median()), unit)}"]
    for x, y in zip(order, order[1:]):
        sign = ">" if separated.get(frozenset((x, y))) else "≈"
        parts.append(f"{sign} {y} {fmt(float(samples[y].median()), unit)}")
    line = " ".join(parts) + f" ({'higher' if better == 'higher' else 'lower'} is better; medians; > where "\
        "the pair test separates the neighbours, Holm over all pairs)"
    o = omnibus({lv: v.to_numpy() for lv, v in samples.items()})
    if math.isnan(o.kw_p):
        return _row(study, claim, side.published, line, UNDECIDED, o.assumptions)
    anova_ok = "assumptions hold" in o.assumptions
    tests = [("ANOVA", o.anova_p), ("Kruskal-Wallis", o.kw_p)]
    (test, p), (other, other_p) = tests if anova_ok else tests[::-1]
    why = f"{test} p = {p:.3g} ({other} p = {other_p:.3g}; {o.assumptions})"
    if side.differ:
        return _row(study, claim, side.published, line, HOLDS if p < ALPHA else NO_DIFFERENCE, why)
    if p < ALPHA:
        return _row(study, claim, side.published, line, NOT_REPRODUCED, f"they differ here: {why}")
    k = len(samples)
    reach = _reach({lv: samples[lv] for lv in order}, order[0], max(1, k * (k - 1) // 2), within)
    return _absence(study, claim, side.published, line, why, reach, within)


@dataclass(frozen=True)
class Reach:
    """What differences this run could have seen: the largest over the pairs of the smallest
    detectable difference (a fraction), the pair it belongs to, and the rounds at which every
    pair's would reach the absence's threshold at this run's noise (None: not within MAX_ROUNDS)."""
    mde: float
    pair: str
    rounds_needed: int | None


def _reach(samples: dict[str, pd.Series], reference: str, comparisons: int, within: float) -> Reach:
    """detectable() of the decide package on this run's rounds (paired t on within-round
    log ratios, 80% power, Bonferroni over `comparisons`): the same figure decide reports."""
    values = {lv: {int(i): float(v) for i, v in s.items() if v > 0} for lv, s in samples.items()}
    others = [lv for lv in values if lv != reference]
    per = detectable(values, reference, others, ALPHA, comparisons)
    if len(per) < len(others) or not per:
        return Reach(math.nan, "", None)
    worst = max(per, key=per.__getitem__)
    needed = next((n for n in range(3, MAX_ROUNDS + 1)
                   if max(detectable(values, reference, others, ALPHA, comparisons, n).values()) <= within),
                  None)
    return Reach(per[worst], f"{reference} vs {worst}", needed)


def _absence(study: str, claim: str, published: str, line: str, why: str, reach: Reach,
             within: float) -> dict:
    limit = f"{within:.0%}"
    if math.isnan(reach.mde):
        return _row(study, claim, published, line, UNDECIDED,
                    f"no significant difference ({why}), but an absence needs the run's smallest "
                    "detectable difference, and that needs 3 rounds of each (-n 3 or more)")
    seen = f"smallest detectable difference here {reach.mde:.1%} ({reach.pair}, the largest over the pairs)"
    measured = f"{line}; {seen}"
    if reach.mde <= within:
        return _row(study, claim, published, measured, HOLDS,
                    f"no significant difference ({why}), and this run could have seen one of "
                    f"{reach.mde:.1%} or more (80% power): within the {limit} an absence allows")
    more = (f"-n {reach.rounds_needed} would at this noise" if reach.rounds_needed else
            f"not even {MAX_ROUNDS} rounds would at this noise")
    return _row(study, claim, published, measured, UNDECIDED,
                f"no significant difference ({why}), but this run could only have seen "
                f"differences of {reach.mde:.1%} or more: not the absence of one of {limit}; {more}")


def _separated(samples: dict[str, pd.Series]) -> dict[frozenset, bool]:
    """Every pair of levels: is it separated by the pair test, Holm over all pairs?"""
    pairs = list(combinations(samples, 2))
    ps = []
    for x, y in pairs:
        a, b = samples[x], samples[y]
        ps.append(pair_test(a.to_numpy(), b.to_numpy(), a.index.to_numpy(), b.index.to_numpy())["p"]
                  if len(a) >= 2 and len(b) >= 2 else math.nan)
    tested = [i for i, p in enumerate(ps) if not math.isnan(p)]
    adjusted = holm([ps[i] for i in tested]) if tested else np.array([])
    out = {frozenset(pairs[i]): False for i in range(len(pairs))}
    for i, p in zip(tested, adjusted):
        out[frozenset(pairs[i])] = bool(p < ALPHA)
    return out


def _pair(study: str, side: Side, a: str, b: str, fio: pd.DataFrame, within: float) -> dict:
    claim = (f"{a} and {b} differ on writes (the notebook's paired Wilcoxon)" if side.differ else
             f"{a} and {b} do not differ on reads (the notebook's paired Wilcoxon)")
    levels = set(fio["label"])
    if a not in levels or b not in levels:
        missing = " and ".join(x for x in (a, b) if x not in levels)
        return _row(study, claim, side.published_pair, "–", NOT_MEASURED, f"{missing} not run")
    results = []
    for workload, metrics in side.workloads.items():
        g = fio[fio["case"] == workload]
        for metric in metrics:
            x, y = series(g, a, metric), series(g, b, metric)
            if len(x) >= 2 and len(y) >= 2:
                t = pair_test(x.to_numpy(), y.to_numpy(), x.index.to_numpy(), y.index.to_numpy())
                results.append((workload, x, y, t["p"], t["smallest_p"], t))
    if not results:
        return _row(study, claim, side.published_pair, "–", NOT_MEASURED,
                    f"fewer than 2 rounds of both on any {side.name[:-1]} workload")
    adjusted = holm([r[3] for r in results])
    differ = [r for r, p in zip(results, adjusted) if p < ALPHA]
    measured = "; ".join(f"{w}: {b}/{a} {fmt(float(y.median()) / float(x.median()) if x.median() else math.nan, 'ratio')}"
                         f"{' (separated)' if p < ALPHA else ''}"
                         for (w, x, y, _, _, _), p in zip(results, adjusted))
    why = (f"separated in {len(differ)} of {len(results)} {side.name[:-1]} workloads (the answer's "
           f"pair test, Holm over the workloads; least p = {min(adjusted):.3g}), tested per "
           "workload: pooling IOPS of different jobs mixes their scales")
    need = max(rounds_to_decide(r[5]["test"], r[5]["matched"], len(results)) for r in results)
    n = (len(results[0][1]), len(results[0][2]))
    if not differ and all(r[4] * len(results) >= ALPHA for r in results) and need > min(n):
        # no outcome of these rounds could have been significant: nothing was decided
        t = min(results, key=lambda r: r[4])[5]
        return _row(study, claim, side.published_pair, measured, UNDECIDED,
                    f"{why}; too few rounds for any verdict ({floor_words(t['test'], t['matched'], n, t['smallest_p'])}"
                    f", before Holm){more_rounds(n, need)}")
    if side.differ:
        verdict = HOLDS if len(differ) == len(results) else NO_DIFFERENCE if not differ else UNDECIDED
        if verdict == UNDECIDED:
            why += "; the notebook found a difference in every write metric"
        return _row(study, claim, side.published_pair, measured, verdict, why)
    if differ:
        return _row(study, claim, side.published_pair, measured, NOT_REPRODUCED, f"they differ here: {why}")
    reaches = [_reach({a: x, b: y}, a, len(results), within) for _, x, y, _, _, _ in results]
    # the pair's reach on reads: the least of its workloads' (an absence needs every one)
    worst = next((r for r in reaches if math.isnan(r.mde)), None)
    if worst is None:
        needed = [r.rounds_needed for r in reaches]
        worst = Reach(max(r.mde for r in reaches), f"{a} vs {b}",
                      None if None in needed else max(n for n in needed if n is not None))
    return _absence(study, claim, side.published_pair, measured, why, worst, within)
