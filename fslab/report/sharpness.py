"""How sharp a run was: per ranked (workload, metric), the smallest difference its tests
could separate at 80% power at the noise the run measured (the minimum detectable effect).

It is decide's own figure (fslab.decide.posterior.smallest_detectable): the paired t-test
on within-round log ratios at the Holm-first (Bonferroni) level over the group's pairs,
from each pair's own spread of log ratios to the best, the median over the others. So
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
from fslab.decide.posterior import POWER, smallest_detectable

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
    """'could see ≥ 23%' or, from 100% on, 'could see ≥ 2.7×' (the smallest difference
    the tests separate at 80% power)."""
    if not isinstance(mde, (int, float)) or not math.isfinite(mde):
        return ""
    # beyond doubling, the factor reads better than a percentage ("≥ 2.7×", not "≥ 165%")
    return f"could see ≥ {mde:.0%}" if mde < 1 else f"could see ≥ {1 + mde:.2g}×"


SHARPNESS_NOTE = (f"could see: the smallest difference each verdict's tests separate with "
                  f"{POWER:.0%} power at the noise this run measured (its within-round spread "
                  f"of log ratios to the best, Holm-first level over its pairs; the median "
                  f"over the others); a '~' with a large figure needs more rounds (-n), not a "
                  f"tie")
