"""The tests behind the claims: the answer's own pair test and ALPHA, and the few tests the
answer has no use for (equivalence, an interval around one filesystem's median).

Every two-sample comparison goes through pair_test() below, so a claim and the answer's
tier line never disagree about the same two samples."""
from __future__ import annotations

import numpy as np
from scipy import stats

from fslab.analysis.describe import median_ci_ranks
from fslab.analysis.paired import PairedT
from fslab.analysis.pairwise import (MANN_WHITNEY, SIGN_FLIP, compare_levels, effect_sign, holm,
                                     smallest_p)
from fslab.analysis.significance import ALPHA, MIN_BLOCKS

__all__ = ["ALPHA", "holm", "pair_test", "tost", "median_ci", "rounds_to_decide", "floor_words"]


def pair_test(a: np.ndarray, b: np.ndarray, a_rounds: np.ndarray, b_rounds: np.ndarray) -> dict:
    """p of a vs b, the ratio b/a and its 95% interval, and `direction` (+1: b above a, -1:
    below, 0: level) from the answer's pair test's own estimate (fslab.analysis.pairwise:
    rounds pair the samples when both ran in the same ones), never from the medians.
    One call, so switching to the blocked within-round test is one line."""
    rows = compare_levels({"a": (np.asarray(a, float), np.asarray(a_rounds)),
                           "b": (np.asarray(b, float), np.asarray(b_rounds))},
                          "lower", pairable=True, seed_key=("claims",))
    r = rows[0]
    return {"p": r.p, "ratio": r.ratio, "ci": (r.ratio_ci_lo, r.ratio_ci_hi),
            "smallest_p": r.smallest_p, "test": r.test or "Mann-Whitney U",
            "direction": effect_sign(r), "matched": bool(r.matched)}


def rounds_to_decide(test: str, matched: bool, comparisons: int) -> int:
    """The fewest rounds per filesystem at which a pair's test can give p < ALPHA at the
    Holm-first level of `comparisons` tests. Levels that ran in the same rounds get the
    paired t-test from MIN_BLOCKS common rounds on, and it reaches any p; a difference
    identical in every round gets the exact sign-flip test (floor 2 / 2^n); levels that did
    not run in the same rounds get Mann-Whitney U (floor 2 / C(2n, n))."""
    level = ALPHA / max(1, comparisons)
    n = MIN_BLOCKS
    if test == SIGN_FLIP:
        while 2 / 2 ** n >= level:
            n += 1
    elif test == MANN_WHITNEY and not matched:
        n = 2
        while smallest_p(n, n) >= level:
            n += 1
    return n


def floor_words(test: str, matched: bool, n: tuple[int, int], floor: float) -> str:
    """Which test these rounds got and the smallest p it can give, said as it is."""
    if test == SIGN_FLIP:
        return (f"the within-round differences did not vary, so the test is the exact sign-flip "
                f"test, whose smallest possible p on {min(n)} rounds is 2/2^{min(n)} = {floor:.2g}")
    if test == MANN_WHITNEY and matched and min(n) < MIN_BLOCKS:
        return (f"the paired t-test on within-round ratios needs {MIN_BLOCKS} common rounds, so "
                f"the test is Mann-Whitney U, whose smallest possible p at {n[0]}+{n[1]} is {floor:.2g}")
    return f"the test is {test}, whose smallest possible p at {n[0]}+{n[1]} is {floor:.2g}"


def tost(d: np.ndarray, tolerance: float) -> tuple[float, tuple[float, float]]:
    """Two one-sided t-tests that the mean of d lies within ±tolerance: (p, the 90% interval
    of the mean, the interval TOST at 5% amounts to)."""
    t = PairedT.of(d)       # the answer's paired t, one-sided each way
    n, mean, se = t.n, t.mean, t.se
    if se == 0:
        inside = abs(mean) < tolerance
        return (0.0 if inside else 1.0), (mean, mean)
    lower = stats.t.sf((mean + tolerance) / se, n - 1)      # H0: mean <= -tolerance
    upper = stats.t.cdf((mean - tolerance) / se, n - 1)     # H0: mean >= +tolerance
    return float(max(lower, upper)), t.one_sided_bounds(ALPHA)


def median_ci(x: np.ndarray) -> tuple[float, float] | None:
    """Distribution-free 95% interval of the median (order statistics; the report's own),
    or None with fewer than 6 values."""
    ranks = median_ci_ranks(len(x))
    if ranks is None:
        return None
    s = np.sort(x)
    return float(s[ranks[0] - 1]), float(s[ranks[1] - 1])
