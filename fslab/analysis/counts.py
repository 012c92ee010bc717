"""Counts of trials: k successes out of n trials per unit, compared on the trials pooled over rounds.

A suite may declare that a metric counts successes out of another metric of the same unit
(fslab.workloads.base.Metric.trials: `silent` blocks out of `damaged` ones). Comparing one
count per round would need 4-5 rounds per filesystem before any test can say anything
(8 of 8 flips returned silently vs 8 of 8 caught would be "n too small" at 1-2 rounds).
Here each level's successes and trials are summed over its rounds, and every pair of levels
is compared on that 2x2 table (successes / failures x level) with an exact test, then Holm
across the pairs of the group (fslab.analysis.pairwise, so verdicts read the same).

The assumption, stated with every test name: every trial is exchangeable with the others,
whichever round (unit) it came from. The trials of one unit share a filesystem instance,
so this is a per-trial model: it answers "how often does this filesystem handle a damaged
block so", not "how often does a fresh filesystem instance behave so". A filesystem whose
instances differ (one round all silent, the next all caught) pools to a middling rate.

The test: Boschloo's exact test (scipy.stats.boschloo_exact), which uses Fisher's p as its
statistic and maximises over the unknown common rate instead of conditioning on the
column totals, so one-sided it is uniformly more powerful than Fisher's (8 of 8 vs 0 of 8:
p = 3.1e-5 against Fisher's 1.6e-4; 6 of 8 vs 0 of 8: 0.0022 against 0.0070, which is
what separates 7 variants after Holm). scipy's two-sided Boschloo p is twice the smaller
one-sided p; with equal trial totals (every unit damages the same number of blocks) it
was never above Fisher's two-sided p in an exhaustive check at 8+8 and 16+16 trials, with
unequal totals it can be (1.4x at 8+24). Its cost grows with the product of the trial
totals (0.005 s per pair up to ~64+64, 0.03 s at 100+100, 4 s at 640+640), so pairs
with more than MAX_BOSCHLOO_TABLES possible tables use Fisher's exact test instead: a
rule fixed by the trial totals alone, never by the outcome, at sizes where the two give
nearly the same p.

Pair rows are fslab.analysis.pairwise.compare_levels' PairRow, read for counts: n_* =
pooled trials, median_* = pooled rate k/n, ratio = rate_other / rate_baseline (NaN when
the baseline rate is 0), no ratio interval (NaN), delta = the rate difference (which is
Cliff's delta of the trials' 0/1 outcomes, so its magnitude words mean the same),
smallest_p = the smallest p the test can give at those trial totals (all successes on one
side, none on the other), plus `design` = "pooled trials".
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import combinations
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from fslab.analysis.pairwise import PairRow, _holm, format_p

DESIGN = "pooled trials"
# (n_a + 1) * (n_b + 1) possible tables: Boschloo up to this many, Fisher beyond (module doc)
MAX_BOSCHLOO_TABLES = 10_000


@dataclass
class Pooled:
    """One group's counts: the metric counting its trials, and per level (successes, trials)
    summed over its rounds."""
    trials: str
    levels: dict[str, tuple[int, int]]

    def rate(self, level: str) -> float:
        k, n = self.levels[level]
        return k / n if n else math.nan


def group_id(key: Sequence) -> tuple[str, ...]:
    """A group's key as a dict key (a groupby's key may hold NaN, which equals nothing)."""
    return tuple(str(x) for x in key)


def pooled_counts(data: pd.DataFrame, keys: list[str],
                  trials: Mapping[str, str]) -> dict[tuple[str, ...], Pooled]:
    """Every group whose metric counts trials (`trials`: metric -> its trials metric), pooled
    per level. A group is left to the per-round tests when a record has no trials count in
    its unit, or a count is not a whole number between 0 and its trials."""
    counted = data[data["metric"].isin(list(trials))]
    if counted.empty:
        return {}
    unit = [k for k in keys if k not in ("metric", "unit")] + ["level", "iteration"]
    parts = []
    for metric, g in counted.groupby("metric", sort=False):
        den = data[data["metric"] == trials[metric]].drop_duplicates(unit)
        parts.append(g.merge(den[unit + ["value"]].rename(columns={"value": "_trials"}),
                             on=unit, how="left"))
    merged = pd.concat(parts, ignore_index=True)
    out = {}
    for key, g in merged.groupby(keys, sort=True, dropna=False):
        k, n = g["value"].to_numpy(float), g["_trials"].to_numpy(float)
        if (np.isnan(n).any() or np.isnan(k).any() or (k != np.round(k)).any()
                or (n != np.round(n)).any() or (k < 0).any() or (k > n).any()):
            continue
        sums = g.assign(_k=k, _n=n).groupby("level", sort=True)[["_k", "_n"]].sum()
        out[group_id(key)] = Pooled(trials[g["metric"].iloc[0]],
                                    {str(lv): (int(r._k), int(r._n)) for lv, r in sums.iterrows()})
    return out


def estimates(pooled: dict[tuple[str, ...], Pooled], summary: pd.DataFrame,
              keys: list[str]) -> pd.Series:
    """The summary's `estimate` column: the pooled rate of each counted group's level, NaN
    elsewhere."""
    out = np.full(len(summary), math.nan)
    if pooled:
        for i, row in enumerate(summary[keys + ["level"]].itertuples(index=False, name=None)):
            p = pooled.get(group_id(row[:-1]))
            if p is not None and str(row[-1]) in p.levels:
                out[i] = p.rate(str(row[-1]))
    return pd.Series(out, index=summary.index)


def test_name(trials: str, n_a: int, n_b: int) -> str:
    """The test of one pair, with its assumption (shown to users)."""
    test = "Boschloo" if _boschloo(n_a, n_b) else "Fisher"
    return f"{test} exact test on the {trials} pooled over rounds (each one an exchangeable trial)"


def _boschloo(n_a: int, n_b: int) -> bool:
    return (n_a + 1) * (n_b + 1) <= MAX_BOSCHLOO_TABLES


@lru_cache(maxsize=4096)
def pair_p_value(k_a: int, n_a: int, k_b: int, n_b: int) -> float:
    """Two-sided exact p of k_a of n_a vs k_b of n_b (Boschloo, or Fisher for large totals)."""
    if k_a + k_b == 0 or k_a + k_b == n_a + n_b:      # nothing differs: every trial alike
        return 1.0
    table = [[k_a, k_b], [n_a - k_a, n_b - k_b]]        # columns: the two levels
    if _boschloo(n_a, n_b):
        return float(stats.boschloo_exact(table, alternative="two-sided").pvalue)
    return float(stats.fisher_exact(table, alternative="two-sided").pvalue)


def smallest_p(n_a: int, n_b: int) -> float:
    """The smallest p the test can give at these trial totals: every trial a success on one
    side, none on the other."""
    return pair_p_value(n_a, n_a, 0, n_b)


# The order of a counted pair's columns in Analysis.pairs: a frame whose first group is a
# count of trials has always had them so (`design` last), kept so its exports do not change.
COUNT_COLUMNS = ("baseline", "other", "n_baseline", "n_other", "test", "paired", "blocks",
                 "matched", "ratio_ci_level", "shift", "p", "median_baseline", "median_other",
                 "ratio", "ratio_ci_lo", "ratio_ci_hi", "change_pct", "delta", "better",
                 "smallest_p", "note", "p_holm", "magnitude", "significant", "winner", "verdict",
                 "design", "negligible")


def compare_counts(pooled: Pooled, better: str | None, levels: Sequence[str]) -> list[PairRow]:
    """All pairs of the levels that have trials (in `levels` order: the first of a pair is
    its baseline), Holm-adjusted together; no rows when the metric has no better direction."""
    if better not in ("higher", "lower"):
        return []
    present = [lv for lv in levels if pooled.levels.get(lv, (0, 0))[1] > 0]
    rows = _holm([_row(pooled, a, b, better) for a, b in combinations(present, 2)])
    return [replace(r, verdict=f"{_pct(r.median_baseline)} → {_pct(r.median_other)} of "
                               f"{pooled.trials} ({format_p(r.p_holm)}, Cliff's δ={r.delta:.2f} "
                               f"{r.magnitude})") if r.significant else r for r in rows]


def _row(pooled: Pooled, a: str, b: str, better: str) -> PairRow:
    (k_a, n_a), (k_b, n_b) = pooled.levels[a], pooled.levels[b]
    rate_a, rate_b = k_a / n_a, k_b / n_b
    ratio = rate_b / rate_a if rate_a else math.nan
    return PairRow(baseline=a, other=b, n_baseline=n_a, n_other=n_b,
                   test=test_name(pooled.trials, n_a, n_b), design=DESIGN, paired=False, blocks=0,
                   matched=False, ratio_ci_level=math.nan, shift=rate_b - rate_a,
                   p=pair_p_value(k_a, n_a, k_b, n_b),
                   median_baseline=rate_a, median_other=rate_b, ratio=ratio,
                   ratio_ci_lo=math.nan, ratio_ci_hi=math.nan,
                   change_pct=(ratio - 1) * 100 if not math.isnan(ratio) else math.nan,
                   delta=rate_b - rate_a, better=better, smallest_p=smallest_p(n_a, n_b),
                   note="")


def _pct(rate: float) -> str:
    return f"{rate * 100:.3g}%"
