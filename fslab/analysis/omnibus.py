"""Do the levels of one group differ at all? Kruskal-Wallis, and one-way ANOVA with its
assumption checks (Shapiro-Wilk on residuals, Levene around the median) beside it."""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from fslab.analysis.significance import ALPHA


@dataclass(frozen=True)
class Omnibus:
    """The tests across all levels of one group: NaN where a test could not run, with the
    reason in `assumptions` (the analysis' omnibus table has one row of these per group)."""
    levels: int
    kw_h: float = math.nan           # Kruskal-Wallis H and its p
    kw_p: float = math.nan
    anova_f: float = math.nan        # one-way ANOVA's F and its p
    anova_p: float = math.nan
    shapiro_p: float = math.nan      # Shapiro-Wilk on the residuals
    levene_p: float = math.nan       # Levene around the median
    assumptions: str = ""


def omnibus(samples: dict[str, np.ndarray]) -> Omnibus:
    """Tests across all levels; NaN where a test cannot run, with the reason in `assumptions`."""
    arrays = [a for a in samples.values() if len(a) > 0]
    out = Omnibus(levels=len(arrays))
    if len(arrays) < 2 or min(len(a) for a in arrays) < 2:
        return replace(out, assumptions="too few samples for tests across levels "
                                        "(need 2 levels with n >= 2)")
    pooled = np.concatenate(arrays)
    if np.all(pooled == pooled[0]):
        return replace(out, kw_p=1.0, anova_p=1.0,
                       assumptions="every value is identical: no difference to test")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # scipy warns on tiny or constant inputs
        kw_h, kw_p = map(float, stats.kruskal(*arrays))
        anova_f, anova_p = map(float, stats.f_oneway(*arrays))
        residuals = np.concatenate([a - a.mean() for a in arrays])
        shapiro_p = (float(stats.shapiro(residuals).pvalue)
                     if len(residuals) >= 3 and np.ptp(residuals) > 0 else math.nan)
        levene_p = float(stats.levene(*arrays, center="median").pvalue)
    n = min(len(a) for a in arrays)
    if n < MIN_N_TO_CHECK:
        assumptions = (f"too few values to check ANOVA's assumptions (n={n} per level; "
                       f"Shapiro-Wilk and Levene need {MIN_N_TO_CHECK}+): rely on "
                       "Kruskal-Wallis")
    else:
        assumptions = assumption_sentence(shapiro_p, levene_p)
    return Omnibus(len(arrays), kw_h, kw_p, anova_f, anova_p, shapiro_p, levene_p, assumptions)


# Below this many values per level, Levene says "variances differ" for 2 values whatever
# they are, and "assumptions hold" for 3 values with SDs of 1 vs 245: not a check at all.
MIN_N_TO_CHECK = 5


def assumption_sentence(shapiro_p: float, levene_p: float) -> str:
    problems = []
    if math.isnan(shapiro_p):
        problems.append("normality of residuals could not be checked")
    elif shapiro_p < ALPHA:
        problems.append(f"residuals are not normal (Shapiro-Wilk p={shapiro_p:.3g})")
    if math.isnan(levene_p):
        problems.append("equal variances could not be checked")
    elif levene_p < ALPHA:
        problems.append(f"variances differ between levels (Levene p={levene_p:.3g})")
    if not problems:
        return (f"ANOVA's assumptions hold (Shapiro-Wilk p={shapiro_p:.3g}, "
                f"Levene p={levene_p:.3g}); ANOVA and Kruskal-Wallis are both usable.")
    return "ANOVA's assumptions fail: " + "; ".join(problems) + ". Rely on Kruskal-Wallis."
