"""Does a filesystem's own noise carry over from round to round?

The within-round tests (pairwise.py) take each round's log ratio as an independent draw.
If a level's own noise persists across rounds (a backing image or a placement that stays
for several rounds: AR(1) with 0.7 makes identical filesystems "≫" in 28-69% of simulated
runs), the rounds are fewer independent pieces of evidence than they look and the tests
are too sure.

The check: per group (workload x metric), the within-round residuals of the log values
(log value - level mean - round mean + grand mean: what is left once the level and the
round's shared drift are taken out), and for each level their lag-1 autocorrelation in
round order. The statistic is the mean over every (group, level) series; its p-value is
a permutation test that shuffles the order of the rounds (one shuffle for the whole run,
so groups measured in the same round move together): with independent rounds the order
carries nothing, so the observed mean is no larger than a shuffled one's.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

MIN_ROUNDS = 4          # fewer: a lag-1 autocorrelation of residuals says nothing
PERMUTATIONS = 999
WARN_P = 0.01


def _checkable() -> int:
    """The fewest rounds at which the check can warn at all: a series and its reverse have
    the same lag-1 autocorrelation, so at least 2 of the n! round orders are as extreme as
    the observed one and p >= 2 / n! (4 rounds: 0.083, 5: 0.017, both above WARN_P)."""
    n = MIN_ROUNDS
    while 2 / math.factorial(n) >= WARN_P:
        n += 1
    return n


CHECKABLE = _checkable()    # 6


@dataclass(frozen=True)
class Carryover:
    lag1: float                     # mean lag-1 autocorrelation over the series
    p: float                        # one-sided permutation p (carry-over is positive)
    series: int                     # (group, level) series it is the mean of
    rounds: int                     # the most rounds a series had
    per_level: dict[str, float] = field(default_factory=dict)

    @property
    def violated(self) -> bool:
        return self.series > 0 and self.p < WARN_P and self.lag1 > 0


def residual_series(data: pd.DataFrame, keys: list[str],
                    groups: list[tuple] | None = None) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """(level, its rounds sorted, its within-round residuals) for every level of every
    group (or of `groups`) that ran once per round in at least MIN_ROUNDS common rounds
    with positive values."""
    out = []
    wanted = set(groups) if groups is not None else None
    for key, g in data.groupby(keys, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        if wanted is not None and key not in wanted:
            continue
        if (g["value"] <= 0).any() or g.duplicated(["level", "iteration"]).any():
            continue
        wide = g.pivot(index="level", columns="iteration", values="value").dropna(axis=1)
        if wide.shape[0] < 2 or wide.shape[1] < MIN_ROUNDS:
            continue
        y = np.log(wide.to_numpy(dtype=float))
        e = y - y.mean(axis=1, keepdims=True) - y.mean(axis=0, keepdims=True) + y.mean()
        rounds = wide.columns.to_numpy()
        out += [(str(lv), rounds, e[i]) for i, lv in enumerate(wide.index)]
    return out


def _lag1(e: np.ndarray) -> np.ndarray:
    """Lag-1 autocorrelation along the last axis (series already centred)."""
    den = (e ** 2).sum(axis=-1)
    num = (e[..., :-1] * e[..., 1:]).sum(axis=-1)
    return np.where(den > 0, num / np.where(den > 0, den, 1), 0.0)


def carryover(data: pd.DataFrame, keys: list[str], groups: list[tuple] | None = None,
              permutations: int = PERMUTATIONS, seed: int = 0) -> Carryover:
    series = residual_series(data, keys, groups)
    if not series:
        return Carryover(float("nan"), float("nan"), 0, 0)
    observed = np.array([_lag1(e) for _, _, e in series])
    every_round = np.unique(np.concatenate([r for _, r, _ in series]))
    position = {r: i for i, r in enumerate(every_round)}
    keys_random = np.random.default_rng(seed).random((permutations, len(every_round)))
    shuffled = np.zeros(permutations)
    for _, rounds, e in series:
        order = np.argsort(keys_random[:, [position[r] for r in rounds]], axis=1)
        shuffled += _lag1(e[order])
    shuffled /= len(series)
    stat = float(observed.mean())
    p = float((1 + np.sum(shuffled >= stat - 1e-12)) / (1 + permutations))
    per_level: dict[str, list[float]] = {}
    for (lv, _, _), r in zip(series, observed):
        per_level.setdefault(lv, []).append(float(r))
    return Carryover(stat, p, len(series), max(len(r) for _, r, _ in series),
                     {lv: float(np.mean(v)) for lv, v in per_level.items()})


def carryover_text(c: Carryover) -> str:
    """The answer's note when a run's own data says its rounds are not independent."""
    worst = sorted(c.per_level.items(), key=lambda kv: -kv[1])[:3]
    return (f"rounds not independent: each filesystem's own noise carries over from round to "
            f"round here (lag-1 autocorrelation of within-round residuals {c.lag1:+.2f} over "
            f"{c.series} series, permutation p = {c.p:.3f}; highest: "
            + ", ".join(f"{lv} {r:+.2f}" for lv, r in worst)
            + "). The within-round tests assume it does not, so their '≫' may be too sure "
            "(docs/statistics.md)")


def unchecked_text(rounds: int) -> str:
    """The answer's note where the check cannot warn: fewer than CHECKABLE rounds."""
    return (f"rounds' independence not checkable below {CHECKABLE} rounds (this run: "
            f"{rounds}): the within-round tests assume each round's noise is its own; if "
            f"it carries over, their '≫' may be too sure (docs/statistics.md)")
