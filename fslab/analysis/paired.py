"""Student's paired t on within-round differences: the answer's blocked test of a pair
(pairwise.pair_test on log ratios), decide's one-sided bounds of a candidate's ratio to the
leader (race.Race.ratio_bounds) and its smallest detectable difference
(posterior.detectable) are this one computation."""
from __future__ import annotations

import math
from dataclasses import dataclass

from functools import lru_cache

import numpy as np
from scipy import optimize, special, stats


@dataclass(frozen=True)
class PairedT:
    """The paired t of n within-round differences d (b against a): their mean and standard
    deviation, on n - 1 degrees of freedom."""
    n: int
    mean: float
    sd: float

    @classmethod
    def of(cls, d: np.ndarray) -> "PairedT":
        return cls(len(d), float(np.mean(d)), float(np.std(d, ddof=1)))

    @classmethod
    def of_log_ratios(cls, a: np.ndarray | list[float], b: np.ndarray | list[float]) -> "PairedT":
        """On log(b) - log(a), round by round: a ratio's test (every value positive)."""
        return cls.of(np.log(b) - np.log(a))

    @property
    def se(self) -> float:
        return self.sd / math.sqrt(self.n)

    @property
    def p(self) -> float:
        """Two-sided p of a mean difference of 0."""
        return float(2 * special.stdtr(self.n - 1, -abs(self.mean / self.se)))

    def interval(self, confidence: float) -> tuple[float, float]:
        """The two-sided `confidence` interval of the mean difference."""
        half = _t_quantile(0.5 + confidence / 2, self.n - 1) * self.se
        return self.mean - half, self.mean + half

    def one_sided_bounds(self, level: float) -> tuple[float, float]:
        """The (lower, upper) one-sided (1 - level) bounds of the mean difference."""
        t = _t_quantile(1 - level, self.n - 1)
        return self.mean - t * self.se, self.mean + t * self.se

    def detectable(self, level: float, power: float, rounds: int | None = None,
                   sd: float | None = None) -> float:
        """The smallest mean difference a one-sided test at `level` finds with `power`, at
        this standard deviation (or `sd`, e.g. noise_bound's), on this many pairs (or
        `rounds`, a projection): exact, from the noncentral t. (The textbook
        (t_alpha + t_power) sd / sqrt(n) is short of it: at Holm's first step over 28
        pairs on 2 degrees of freedom its "80%" is 66%.)"""
        n = rounds or self.n
        return float(_noncentrality(level, power, n - 1) * (self.sd if sd is None else sd)
                     / math.sqrt(n))

    def noise_bound(self, confidence: float) -> float:
        """The one-sided upper `confidence` bound of the standard deviation (chi-square on
        n - 1 degrees of freedom): an sd from 2-4 degrees of freedom is as often half the
        truth as it is right, and a power figure at it is too optimistic as often."""
        df = self.n - 1
        return float(self.sd * math.sqrt(df / special.chdtri(df, confidence)))


# Student's t through scipy.special, which scipy.stats.t's sf and ppf call after checking
# their arguments: the same numbers without the ~50 µs a call those checks cost (a decide
# race asks thousands of times; quantiles here are of probabilities strictly inside (0, 1))
def _t_quantile(q: float, df: int) -> float:
    return float(special.stdtrit(df, q))


@lru_cache(maxsize=4096)
def _noncentrality(level: float, power: float, df: int) -> float:
    """The noncentrality at which a one-sided t-test at `level` on `df` degrees of freedom
    rejects with `power` (scipy's noncentral t: exact, not the normal approximation)."""
    crit = _t_quantile(1 - level, df)
    hi = crit + 2 * _t_quantile(power, df) + 10
    while stats.nct.sf(crit, df, hi) < power:
        hi *= 2
    return float(optimize.brentq(lambda nc: float(stats.nct.sf(crit, df, nc)) - power, 0.0, hi,
                                 xtol=1e-10))
