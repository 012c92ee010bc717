"""What a decision is worth: P(best), the expected loss of each choice, and the smallest
difference the run could have found.

P(best) is a Bayesian bootstrap over rounds (Rubin 1981): each draw weighs the rounds
every finalist ran with Dirichlet(1, ..., 1) weights and takes each finalist's weighted
mean log value; P(best) is the share of draws in which a finalist is best. Rounds, not
single values, are resampled, because a round is the block the candidates share. The
expected loss of choosing a finalist is the mean, over the same draws, of how far it
falls short of that draw's best (as a fraction of the best: 0.02 = 2% of the best's
throughput, or 2% more time or latency than the best).
"""
from __future__ import annotations

import math
import zlib

import numpy as np
from scipy import stats

DRAWS = 4000
POWER = 0.8


def posterior(values: dict[str, dict[int, float]], labels: list[str], better: str,
              seed: int = 0) -> dict[str, dict[str, float]]:
    """label -> {"p_best", "expected_loss"} over the rounds all of `labels` ran."""
    rounds = sorted(set.intersection(*(set(values[lv]) for lv in labels)))
    if len(labels) == 1:
        return {labels[0]: {"p_best": 1.0, "expected_loss": 0.0}}
    if len(rounds) < 2 or any(values[lv][r] <= 0 for lv in labels for r in rounds):
        return {lv: {"p_best": math.nan, "expected_loss": math.nan} for lv in labels}
    logs = np.array([[math.log(values[lv][r]) for lv in labels] for r in rounds])   # rounds x labels
    sign = 1.0 if better == "higher" else -1.0
    rng = np.random.default_rng(zlib.crc32(repr((seed, labels, rounds)).encode()))
    w = rng.dirichlet(np.ones(len(rounds)), size=DRAWS)          # draws x rounds
    means = sign * (w @ logs)                                    # draws x labels, higher = better
    best = means.max(axis=1, keepdims=True)
    p_best = np.bincount(means.argmax(axis=1), minlength=len(labels)) / DRAWS
    loss = 1 - np.exp(-(best - means)) if better == "higher" else np.exp(best - means) - 1
    return {lv: {"p_best": float(p_best[i]), "expected_loss": float(loss[:, i].mean())}
            for i, lv in enumerate(labels)}


def smallest_detectable(values: dict[str, dict[int, float]], winner: str, others: list[str],
                        alpha: float, comparisons: int) -> float:
    """The smallest ratio difference (as a fraction, 0.03 = 3%) the paired t-test on
    within-round log ratios finds with 80% power at this run's noise and rounds: the
    pooled standard deviation of every candidate's log ratio to the winner, at the
    Holm-first (Bonferroni) level of `comparisons` tests. NaN when nothing varies."""
    sds, ns = [], []
    for lv in others:
        rounds = sorted(set(values[winner]) & set(values[lv]))
        if len(rounds) < 3:
            continue
        d = np.log([values[lv][r] for r in rounds]) - np.log([values[winner][r] for r in rounds])
        sds.append(np.var(d, ddof=1) * (len(d) - 1))
        ns.append(len(d))
    if not ns:
        return math.nan
    df = sum(n - 1 for n in ns)
    sd = math.sqrt(sum(sds) / df)
    n = max(ns)
    t_alpha = stats.t.ppf(1 - alpha / (2 * max(1, comparisons)), n - 1)
    t_power = stats.t.ppf(POWER, n - 1)
    return float(math.exp((t_alpha + t_power) * sd / math.sqrt(n)) - 1)
