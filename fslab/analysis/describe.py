"""Per-level description of one group: location, spread, intervals, outliers.

Vectorised over all groups at once (pandas groupby), so a 10,000-file import is
described in well under a second.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

CONFIDENCE = 0.95
OUTLIER_MADS = 10.0          # hyperfine's rule: |x - median| / (1.4826 * MAD) > 10
MAD_TO_SD = 1.4826           # makes the MAD estimate sd for normal data
MEANAD_TO_SD = 1.253314      # the same for the mean absolute deviation (sqrt(pi / 2))


def median_ci_ranks(n: int, confidence: float = CONFIDENCE) -> tuple[int, int] | None:
    """1-based ranks (lo, hi) of the order statistics bracketing the median with at least
    `confidence` coverage (distribution-free, binomial; benchstat's method), or None when
    n is too small for any interval to reach it (n < 6 at 95%)."""
    if n < 1:
        return None
    # coverage of [x_(k), x_(n-k+1)] is 1 - 2 * P(Binom(n, 1/2) <= k - 1); take the tightest
    k = np.arange(1, n // 2 + 1)
    coverage = 1 - 2 * stats.binom.cdf(k - 1, n, 0.5)
    ok = k[coverage >= confidence]
    if ok.size == 0:
        return None
    lo = int(ok.max())
    return lo, n - lo + 1


def min_samples_for_median_ci(confidence: float = CONFIDENCE) -> int:
    return next(n for n in range(1, 100) if median_ci_ranks(n, confidence))


def outlier_mask(values: pd.Series, keys: pd.DataFrame | list) -> pd.Series:
    """True where a value is an outlier within its (group, level); never drops anything.

    Where more than half the values are equal the MAD is 0, and the scale is the mean
    absolute deviation from the median instead (Iglewicz and Hoaglin's modified z-score):
    four fio runtimes of 2.752 s and one of 2.758 s hold no outlier. One value off n - 1
    equal ones then scores n / 1.2533, so fewer than 13 such values flag nothing: without
    a spread among the others there is nothing to call it far by.
    """
    by = values.groupby(keys, sort=False, dropna=False)
    median = by.transform("median")
    dev = (values - median).abs()
    by_dev = dev.groupby(keys, sort=False, dropna=False)
    mad = by_dev.transform("median") * MAD_TO_SD
    scale = np.where(mad > 0, mad, by_dev.transform("mean") * MEANAD_TO_SD)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(scale > 0, dev / scale, 0.0)
    return pd.Series(score > OUTLIER_MADS, index=values.index)


def describe(data: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per (keys..., level): n, mean, median, the geometric mean with each round's
    drift taken out (gmean_adjusted: _round_adjusted_gmeans), sd, cv, min, max, t-interval
    of the mean, order-statistic interval of the median, outlier count."""
    cols = keys + ["level"]
    grouped = data.groupby(cols, sort=True, dropna=False)
    g = grouped["value"]
    out = g.agg(n="count", mean="mean", median="median", sd="std", min="min", max="max")
    out = out.reset_index()
    group = grouped.ngroup().to_numpy()      # each row's group, numbered in `out`'s order
    out["gmean_adjusted"] = _round_adjusted_gmeans(data, keys, out, group)
    n = out["n"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        out["cv"] = out["sd"] / out["mean"].abs()
        half = stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1) * out["sd"] / np.sqrt(n)
    out["mean_ci_lo"] = np.where(n >= 2, out["mean"] - half, np.nan)
    out["mean_ci_hi"] = np.where(n >= 2, out["mean"] + half, np.nan)
    out[["median_ci_lo", "median_ci_hi"]] = _median_cis(data["value"].to_numpy(), group, len(out))
    out["median_ci_note"] = np.where(out["median_ci_lo"].isna(),
                                     f"too few samples (need >= {min_samples_for_median_ci()})", "")
    flags = data["outlier"] if "outlier" in data else outlier_mask(data["value"], [data[c] for c in cols])
    out["outliers"] = np.bincount(group, weights=flags.to_numpy(dtype=float),
                                  minlength=len(out)).astype(int)
    return out


def _round_adjusted_gmeans(data: pd.DataFrame, keys: list[str], out: pd.DataFrame,
                           cell: np.ndarray) -> np.ndarray:
    """Each level's geometric mean with each round's drift taken out: the least-squares
    fit of log value = level + round (the blocked design's additive model, round effects
    summing to zero) over every round, using each value > 0 that is its level's only one in
    its round. With every level in every round this is exactly the geometric mean over the
    rounds (two levels' differ by their mean within-round log ratio, what the tests
    compare). With levels missing rounds (a decide's eliminated or retired, a failed unit)
    each level is placed by the rounds it ran, corrected for how fast those rounds were,
    and the others keep all their rounds: a level that missed a slow round does not look
    best for it, and a candidate eliminated at round 3 does not reduce the others' order
    to rounds 1-3. NaN for the whole group where it has fewer than 2 rounds, a level with
    no usable value, or levels no round links (one estimator for every level of a group).

    `cell`: each record's row of `out` (its group and level); worked on those numbers, not
    on the key columns, which costs a few pandas calls per report instead of dozens."""
    result = np.full(len(out), np.nan)
    group_of_cell = out.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
    value = data["value"].to_numpy(dtype=float)
    rounds_of = data["iteration"].to_numpy()
    usable = np.flatnonzero(value > 0)
    # a level's value in a round is usable only where it is its only one there
    twice = pd.DataFrame({"cell": cell[usable], "round": rounds_of[usable]}).duplicated(keep=False)
    rows = usable[~twice.to_numpy()]
    if rows.size == 0:
        return result
    cells, groups = cell[rows], group_of_cell[cell[rows]]
    n_groups = int(group_of_cell.max()) + 1
    levels = np.bincount(group_of_cell[np.unique(cells)], minlength=n_groups)
    round_code = pd.factorize(rounds_of[rows])[0]
    rounds = np.bincount(np.unique(np.column_stack([groups, round_code]), axis=0)[:, 0],
                         minlength=n_groups)
    size = np.bincount(groups, minlength=n_groups)
    whole = (rounds >= 2) & (levels == np.bincount(group_of_cell, minlength=n_groups))
    balanced = whole & (size == levels * rounds)
    log = np.log(value[rows])
    in_balanced = balanced[groups]
    means = pd.Series(log[in_balanced]).groupby(cells[in_balanced]).mean()
    result[means.index.to_numpy()] = np.exp(means.to_numpy())
    level_of = data["level"].to_numpy()
    for group in np.flatnonzero(whole & ~balanced):   # unbalanced: the additive fit, one at a time
        at = rows[groups == group]
        g_levels, g_rounds = pd.unique(level_of[at]), pd.unique(rounds_of[at])
        n, nl, nr = len(at), len(g_levels), len(g_rounds)
        li = pd.Index(g_levels).get_indexer(level_of[at])
        ri = pd.Index(g_rounds).get_indexer(rounds_of[at])
        x = np.zeros((n, nl + nr - 1))
        x[np.arange(n), li] = 1.0
        last = ri == nr - 1        # deviation coding: the last round's effect is minus the others'
        x[np.flatnonzero(~last), nl + ri[~last]] = 1.0
        x[np.flatnonzero(last), nl:] = -1.0
        coef, _, rank, _ = np.linalg.lstsq(x, log[groups == group], rcond=None)
        if rank < x.shape[1]:      # some levels share no round with the others
            continue
        first_at = at[np.unique(li, return_index=True)[1]]      # a record of each level
        result[cell[first_at]] = np.exp(coef[:nl])
    return result


def _median_cis(values: np.ndarray, group: np.ndarray, groups: int) -> np.ndarray:
    """Order-statistic CI bounds per group, picked from each group's sorted values
    (NaN sorts last, as sort_values puts it)."""
    ordered = values[np.lexsort((values, group))]
    sizes = np.bincount(group, minlength=groups)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    bounds = np.full((groups, 2), np.nan)
    ranks_cache: dict[int, tuple[int, int] | None] = {}
    for i, (start, size) in enumerate(zip(starts, sizes)):
        if size not in ranks_cache:
            ranks_cache[size] = median_ci_ranks(int(size))
        ranks = ranks_cache[size]
        if ranks:
            bounds[i] = ordered[start + ranks[0] - 1], ordered[start + ranks[1] - 1]
    return bounds
