"""The significance level of every verdict, and the fewest rounds that can reach it.

Kept apart from the tests themselves (scipy): the dry run says "too few rounds" before
a run without loading the statistics engine."""
from __future__ import annotations

import math

ALPHA = 0.05


def rounds_needed(k: int) -> int:
    """The fewest rounds per filesystem with which the exact two-sided Mann-Whitney test
    can separate two of k filesystems after Holm's correction over all k(k-1)/2 pairs
    (no ties: the smallest p-value is 2 / C(2n, n))."""
    pairs = max(1, k * (k - 1) // 2)
    n = 2
    while 2 / math.comb(2 * n, n) >= ALPHA / pairs:
        n += 1
    return n
