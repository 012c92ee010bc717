"""Rank tests shared by bench/noise and bench/decide: does a label or a place in the round
give identical copies a systematic advantage?"""
from __future__ import annotations

import numpy as np


def rank_p(ranks: np.ndarray, group: np.ndarray, draws: int = 4000, seed: int = 1) -> float:
    """Monte Carlo permutation p (4,000 draws: its own error at most ±0.016) of the chi-square
    statistic of ranks against groups (a copy's label, or its place in the round): under no
    advantage each round's ranks are a uniform permutation, which the draws reproduce
    (chi-square's own p is not trusted with two or three values per cell)."""
    k = ranks.shape[1]
    keep = (group >= 0).all(axis=1)
    ranks, group = ranks[keep], group[keep]
    if len(ranks) < 2:
        return float("nan")

    def stat(r: np.ndarray) -> float:
        tab = np.zeros((k, k))
        np.add.at(tab, (group.ravel(), r.ravel()), 1)
        expected = len(r) / k
        return float(((tab - expected) ** 2 / expected).sum())
    observed = stat(ranks)
    rng = np.random.default_rng(seed)
    hits = sum(stat(rng.permuted(ranks, axis=1)) >= observed - 1e-9 for _ in range(draws))
    return (hits + 1) / (draws + 1)
