"""Do the levels of one group differ at all? Kruskal-Wallis, and one-way ANOVA with its
assumption checks (Shapiro-Wilk on residuals, Levene around the median) beside it."""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from scipy import stats

from fslab.analysis.significance import ALPHA


def omnibus(samples: dict[str, np.ndarray]) -> dict:
    """Tests across all levels; NaN where a test cannot run, with the reason in `assumptions`."""
    arrays = [a for a in samples.values() if len(a) > 0]
    out: dict[str, Any] = {"levels": len(arrays), "kw_h": math.nan, "kw_p": math.nan, "anova_f": math.nan,
           "anova_p": math.nan, "shapiro_p": math.nan, "levene_p": math.nan}
    if len(arrays) < 2 or min(len(a) for a in arrays) < 2:
        out["assumptions"] = "too few samples for tests across levels (need 2 levels with n >= 2)"
        return out
    pooled = np.concatenate(arrays)
    if np.all(pooled == pooled[0]):
        out.update(kw_p=1.0, anova_p=1.0)
        out["assumptions"] = "every value is identical: no difference to test"
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # scipy warns on tiny or constant inputs
        out["kw_h"], out["kw_p"] = map(float, stats.kruskal(*arrays))
        out["anova_f"], out["anova_p"] = map(float, stats.f_oneway(*arrays))
        residuals = np.concatenate([a - a.mean() for a in arrays])
        if len(residuals) >= 3 and np.ptp(residuals) > 0:
            out["shapiro_p"] = float(stats.shapiro(residuals).pvalue)
        out["levene_p"] = float(stats.levene(*arrays, center="median").pvalue)
    n = min(len(a) for a in arrays)
    if n < MIN_N_TO_CHECK:
        out["assumptions"] = (f"too few values to check ANOVA's assumptions (n={n} per level; "
                              f"Shapiro-Wilk and Levene need {MIN_N_TO_CHECK}+): rely on "
                              "Kruskal-Wallis")
    else:
        out["assumptions"] = assumption_sentence(out["shapiro_p"], out["levene_p"])
    return out


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
