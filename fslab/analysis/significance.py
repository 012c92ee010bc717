"""The significance level of every verdict and the fewest rounds that can reach it: one
place for every consumer (answer, tables, claims, recommend, decide).

Kept apart from the tests themselves (scipy): the dry run says "too few rounds" before
a run without loading the statistics engine."""
from __future__ import annotations

import math

ALPHA = 0.05
CONFIDENCE = 1 - ALPHA     # every interval printed beside a verdict
# The smallest difference fslab calls meaningful: a pair its test separates by less (its
# estimated ratio within 1%) is shown "≈, within 1%", never "≫". The default run printed
# "xfs ≫ ext4 (1.0001×)" on write amplification (a deterministic quantity: any difference
# is significant); with a true 0.01% gap, up to 51% of simulated runs did so.
MEANINGFUL = 0.01
# A pair is compared within rounds (paired t-test) from this many common rounds on: with
# two, the test has one degree of freedom and its normality cannot even be looked at.
MIN_BLOCKS = 3


def rounds_needed(k: int, blocked: bool = True) -> int:
    """The fewest rounds per filesystem with which a test can separate two of k
    filesystems after Holm's correction over all k(k-1)/2 pairs. Blocked (every
    filesystem once per round, as fslab's scheduler runs them): the within-round t-test
    from MIN_BLOCKS rounds on, at any k. Unpaired: the exact two-sided Mann-Whitney test,
    whose smallest p-value (no ties) is 2 / C(2n, n)."""
    if blocked:
        return MIN_BLOCKS
    pairs = max(1, k * (k - 1) // 2)
    n = 2
    while 2 / math.comb(2 * n, n) >= ALPHA / pairs:
        n += 1
    return n


def sign_flip_rounds(k: int) -> int:
    """The fewest rounds with which the exact sign-flip test (the blocked test where the
    within-round differences do not vary: smallest p 2 / 2^n) separates two of k after
    Holm over all k(k-1)/2 pairs: 6 for 2 filesystems, 8 for 4."""
    pairs = max(1, k * (k - 1) // 2)
    n = 1
    while 2 / 2 ** n >= ALPHA / pairs:
        n += 1
    return n
