"""Pairwise comparisons within one group, and the benchstat-style verdict.

For each pair (baseline a, other b): Mann-Whitney U, with its exact permutation p-value
(ties kept as midranks, as benchstat does) whenever the permutations can be enumerated,
the normal approximation only beyond that; Holm across all pairs of the group; Cliff's
delta; the ratio of medians b/a with a seeded bootstrap 95% interval (paired by round
when both levels ran in the same rounds).

One test at every n, never a switch to the signed-rank test at some number of rounds:
with k filesystems Holm multiplies the smallest p by k(k-1)/2, and the signed-rank
test's smallest p (2/2^n) would make 8 rounds say less than 7 did. With one test,
more rounds can only make a difference easier to show.
"""
from __future__ import annotations

import math
import warnings
import zlib
from itertools import combinations

import numpy as np
from scipy import stats
from scipy.special import comb

from fslab.analysis.significance import ALPHA

BOOTSTRAP = 1000
MAGNITUDES = ((0.147, "negligible"), (0.33, "small"), (0.474, "medium"))  # Romano et al. 2006


def cliffs_delta(a: np.ndarray, b: np.ndarray) -> float:
    """P(b > a) - P(b < a): +1 when every b exceeds every a."""
    a_sorted = np.sort(a)
    greater = np.searchsorted(a_sorted, b, side="left").sum()          # a < b
    less = len(a) * len(b) - np.searchsorted(a_sorted, b, side="right").sum()   # a > b
    return float((greater - less) / (len(a) * len(b)))


def magnitude(delta: float) -> str:
    d = abs(delta)
    return next((name for bound, name in MAGNITUDES if d < bound), "large")


# Exact permutation p-values up to this many arrangements (8+8 rounds: 12,870).
MAX_EXACT_ARRANGEMENTS = 20_000


def pair_by_round(a_iter: np.ndarray, b_iter: np.ndarray) -> bool:
    """Both levels have exactly one value in each of the same rounds: the bootstrap of
    their ratio resamples rounds (the test stays Mann-Whitney, see the module doc)."""
    return (len(np.unique(a_iter)) == len(a_iter) and len(np.unique(b_iter)) == len(b_iter)
            and np.array_equal(np.sort(a_iter), np.sort(b_iter)))


def smallest_p(n_a: int, n_b: int, paired: bool = False) -> float:
    """The smallest two-sided p Mann-Whitney can give at these sizes (exact, no ties)."""
    return min(1.0, 2 / comb(n_a + n_b, n_a))


_ARRANGEMENTS: dict[tuple[int, int], np.ndarray] = {}


def _arrangements(n: int, k: int) -> np.ndarray:
    """Every way to choose which k of n pooled positions belong to b (cached per size)."""
    if (n, k) not in _ARRANGEMENTS:
        _ARRANGEMENTS[(n, k)] = np.array(list(combinations(range(n), k)), dtype=np.int32)
    return _ARRANGEMENTS[(n, k)]


def exact_mann_whitney_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided permutation p of the rank-sum statistic, ties as midranks: the share of
    all relabellings whose rank sum of b is at least as far from its mean as observed.
    scipy falls back to the normal approximation as soon as there is a tie, which at
    n=3+3 gives p=0.047 for [0,0,0] vs [2,2,2] (exact: 0.10)."""
    pooled = np.concatenate([a, b])
    ranks = stats.rankdata(pooled)
    n, k = len(pooled), len(b)
    sums = ranks[_arrangements(n, k)].sum(axis=1)
    mean = k * (n + 1) / 2
    observed = abs(ranks[len(a):].sum() - mean)
    return float(np.mean(np.abs(sums - mean) >= observed - 1e-9))


def pair_p_value(a: np.ndarray, b: np.ndarray, paired: bool = False) -> float:
    if np.all(a == a[0]) and np.all(b == a[0]):
        return 1.0
    if comb(len(a) + len(b), len(b)) <= MAX_EXACT_ARRANGEMENTS:
        return exact_mann_whitney_p(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.mannwhitneyu(b, a, alternative="two-sided").pvalue)


class BootstrapMedians:
    """Seeded bootstrap distributions of each level's median within one group.

    Paired levels (same rounds) share one matrix of resampled rounds, so a ratio of any
    two of them is a paired bootstrap; unpaired levels resample on their own streams.
    Each level's medians are computed once, however many pairs it is in.
    """
    def __init__(self, seed_key: tuple, rounds: int = BOOTSTRAP):
        self.seed_key, self.rounds, self.cache, self.resamples = seed_key, rounds, {}, {}

    def medians(self, level: str, values: np.ndarray, paired: bool) -> np.ndarray:
        key = (level, paired)
        if key not in self.cache:
            stream = ("rounds", len(values)) if paired else ("level", level)
            if stream not in self.resamples:    # paired levels share one stream: draw it once
                rng = np.random.default_rng(stable_seed(*self.seed_key, *stream))
                self.resamples[stream] = rng.integers(0, len(values), size=(self.rounds, len(values)))
            self.cache[key] = row_medians(values[self.resamples[stream]])
        return self.cache[key]

    def ratio_ci(self, a_name, a, b_name, b, paired: bool) -> tuple[float, float]:
        """95% percentile interval of median(b)/median(a)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = self.medians(b_name, b, paired) / self.medians(a_name, a, paired)
        ratios = ratios[np.isfinite(ratios)]
        if len(ratios) < self.rounds * 0.9:
            return math.nan, math.nan
        lo, hi = np.percentile(ratios, [2.5, 97.5])
        return float(lo), float(hi)


def row_medians(m: np.ndarray) -> np.ndarray:
    """np.median(m, axis=1), bit for bit, by sorting rows (numpy's row sort is several
    times faster than the partition np.median uses)."""
    n = m.shape[1]
    if n == 0 or np.isnan(m).any() or np.signbit(m[m == 0]).any():   # NaN and -0.0: as numpy does
        return np.median(m, axis=1)
    s = np.sort(m, axis=1)
    return s[:, n // 2] if n % 2 else (s[:, n // 2 - 1] + s[:, n // 2]) / 2


def stable_seed(*parts: object) -> int:
    """The same group and pair always get the same bootstrap stream, in any order."""
    return zlib.crc32(repr(parts).encode())


def compare_levels(samples: dict[str, tuple[np.ndarray, np.ndarray]], better: str | None,
                   pairable: bool, seed_key: tuple = ()) -> list[dict]:
    """All pairs of levels (in the given order: the first of a pair is its baseline).

    samples: level -> (values, iterations). Metrics without a direction are described,
    never ranked: they get no rows here.
    """
    if better not in ("higher", "lower"):
        return []
    rows = []
    boot = BootstrapMedians(seed_key)
    levels = [lv for lv, (v, _) in samples.items() if len(v) > 0]
    for a_name, b_name in combinations(levels, 2):
        (a, a_it), (b, b_it) = samples[a_name], samples[b_name]
        if min(len(a), len(b)) < 2:
            rows.append(_row(a_name, b_name, a, b, better, paired=False, p=math.nan, ci=(math.nan,) * 2,
                             note="too few samples to test (need n >= 2 each)"))
            continue
        paired = pairable and pair_by_round(a_it, b_it)
        if paired:   # align the two by round (for the paired bootstrap of the ratio)
            a, b = a[np.argsort(a_it)], b[np.argsort(b_it)]
        p = pair_p_value(a, b)
        ci = boot.ratio_ci(a_name, a, b_name, b, paired)
        rows.append(_row(a_name, b_name, a, b, better, paired, p, ci))
    _holm(rows)
    return rows


def _row(a_name, b_name, a, b, better, paired, p, ci, note="") -> dict:
    med_a, med_b = float(np.median(a)), float(np.median(b))
    ratio = med_b / med_a if med_a != 0 else math.nan
    return {"baseline": a_name, "other": b_name, "n_baseline": len(a), "n_other": len(b),
            "test": "Mann-Whitney U" if not math.isnan(p) else "", "paired": paired, "p": p,
            "median_baseline": med_a, "median_other": med_b, "ratio": ratio,
            "ratio_ci_lo": ci[0], "ratio_ci_hi": ci[1],
            "change_pct": (ratio - 1) * 100 if not math.isnan(ratio) else math.nan,
            "delta": cliffs_delta(a, b) if len(a) and len(b) else math.nan,
            "better": better, "smallest_p": smallest_p(len(a), len(b), paired), "note": note}


def holm(p_values: list[float]) -> np.ndarray:
    """Holm step-down adjusted p-values (as statsmodels' multipletests 'holm', without
    its per-call gc.collect(), which costs 0.1 s per metric)."""
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p)
    m = len(p)
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted


def _holm(rows: list[dict]) -> None:
    """Holm-adjust the pairs' p-values together, then give each pair its verdict."""
    tested = [r for r in rows if not math.isnan(r["p"])]
    if tested:
        adjusted = holm([r["p"] for r in tested])
        for r, p_adj in zip(tested, adjusted):
            r["p_holm"] = float(p_adj)
    for r in rows:
        r.setdefault("p_holm", math.nan)
        r["magnitude"] = magnitude(r["delta"]) if not math.isnan(r["delta"]) else ""
        r["significant"] = bool(r["p_holm"] < ALPHA)
        r["winner"] = _winner(r)
        r["verdict"] = verdict(r)
        if not r["note"] and r["smallest_p"] * len(tested) >= ALPHA:
            r["note"] = (f"n={r['n_baseline']}+{r['n_other']} cannot show a difference "
                         f"(smallest p={r['smallest_p']:.2g})")


def _winner(r: dict) -> str:
    if not r["significant"] or r["median_other"] == r["median_baseline"]:
        return ""
    other_higher = r["median_other"] > r["median_baseline"]
    return r["other"] if other_higher == (r["better"] == "higher") else r["baseline"]


def verdict(r: dict) -> str:
    """benchstat style: '+23.4% (p=0.002, δ=0.81 large)', or '~' when not significant."""
    if not r["significant"]:
        return "~"
    change = (f"{r['change_pct']:+.1f}%" if not math.isnan(r["change_pct"])
              else f"{r['median_other'] - r['median_baseline']:+.4g}")
    return f"{change} ({format_p(r['p_holm'])}, δ={r['delta']:.2f} {r['magnitude']})"


def format_p(p: float) -> str:
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"
