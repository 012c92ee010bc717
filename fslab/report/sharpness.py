"""How sharp a run was: per ranked (workload, metric), the smallest difference its tests
could separate at 80% power at the noise the run measured (the minimum detectable effect).

It is decide's own figure (fslab.decide.posterior.smallest_detectable): the paired t-test
on within-round log ratios at the Holm-first (Bonferroni) level over the group's pairs,
its exact power (noncentral t) at each pair's own spread of log ratios to the best taken
at its 70% upper confidence bound, the median over the others (at the spread itself, the
power at the printed figure was 0.62-0.72 over simulated runs; bench/stats 6). So
"~ (could see ≥ 23%)" says both that nothing was separated and what could have been;
a reader then knows whether more rounds would help. Only groups compared within rounds
have one (two runs compared with each other, counted rates and values that are zero or
negative do not: the figure is the within-round t-test's).
"""
from __future__ import annotations

import math

import pandas as pd

from fslab.analysis import Analysis
from fslab.analysis.significance import ALPHA
from fslab.decide.posterior import NOISE_BOUND, POWER, smallest_detectable

MDE = "mde"


def sharpen(a: Analysis) -> pd.DataFrame:
    """a.tiers with an "mde" column (a fraction, 0.23 = 23%; NaN where none applies),
    computed once per analysis."""
    if a.tiers.empty or MDE in a.tiers.columns:
        return a.tiers
    groups = {key if isinstance(key, tuple) else (key,): g
              for key, g in a.data.groupby(a.keys, sort=False, dropna=False)}
    a.tiers[MDE] = [_mde(t, groups.get(tuple(t[k] for k in a.keys)))
                    for t in a.tiers.to_dict("records")]
    return a.tiers


def _mde(t: dict, g: pd.DataFrame | None) -> float:
    pairs = t.get("pairs") or []
    if g is None or not pairs or any(p.get("design") != "blocked" for p in pairs):
        return math.nan
    values: dict[str, dict[int, float]] = {}
    for lv, h in g.groupby("level"):
        if h["iteration"].duplicated().any() or not (h["value"] > 0).all():
            return math.nan         # not one positive value per round: no log ratios
        values[str(lv)] = dict(zip(h["iteration"].astype(int), h["value"].astype(float)))
    order = [lv for lv in t["order"] if lv in values]
    if len(order) < 2:
        return math.nan
    return smallest_detectable(values, order[0], order[1:], ALPHA, len(pairs))


def could_see(mde: float) -> str:
    """'could see ≥ 23%', 'could see ≥ 2.4%' below 10%, or, from 100% on, 'could see ≥
    2.7×' (the smallest difference the tests separate at 80% power), rounded up: what is
    printed is never less than the figure ("≥ 0%" was printed for 0.3%)."""
    if not isinstance(mde, (int, float)) or not math.isfinite(mde):
        return ""
    # beyond doubling, the factor reads better than a percentage ("≥ 2.7×", not "≥ 165%")
    if mde >= 1:
        factor = 1 + mde
        return (f"could see ≥ {_up(factor, 1):.1f}×" if factor < 10
                else f"could see ≥ {math.ceil(factor - 1e-9):.0f}×")
    if mde >= 0.1:
        return f"could see ≥ {_up(mde * 100, 0):.0f}%"
    return f"could see ≥ {max(_up(mde * 100, 1), 0.1):.1f}%"


def _up(x: float, digits: int) -> float:
    """x rounded up at `digits` decimals (a hair of float error is not rounded up)."""
    scale = 10 ** digits
    return math.ceil(x * scale - 1e-9) / scale


SHARPNESS_NOTE = (f"could see: the smallest difference each verdict's tests separate with "
                  f"{POWER:.0%} power (exact, noncentral t) unless the noise is above its "
                  f"{NOISE_BOUND:.0%} upper bound from this run (its within-round spread of log "
                  f"ratios to the best, Holm-first level over its pairs; the median over the "
                  f"others); a '~' with a large figure needs more rounds (-n), not a tie")
