"""Pairwise comparisons within one group, and the benchstat-style verdict.

Which test a pair gets is fixed by how the run was designed, before any value is seen:

- **Blocked** (the run's interleaved rounds): both levels ran once in each of at least
  three common rounds. Round-to-round drift of the machine is shared by every level of a
  round, so the comparison is made *within* rounds: a paired t-test on the per-round log
  ratios b/a (on plain differences where a value is 0 or negative), whose interval for
  the geometric-mean ratio has its stated coverage at any n under log-normal noise. With
  5% shared drift and 1% own noise, a true 3% difference is found in almost every run at
  8 rounds, where a test blind to the rounds finds it in 1 of 10 (bench/stats). Rounds
  only one of the two ran (a failed unit) are left out of that pair. When the within-round
  differences do not vary at all (a deterministic quantity), the t statistic is undefined
  and the pair gets the unpaired test below.
- **Unpaired** (rounds that do not match, runs compared with each other, fewer than three
  common rounds): Mann-Whitney U with its exact permutation p-value (ties kept as
  midranks, as benchstat does): enumerated up to 20,000 arrangements, counted from U's
  exact distribution beyond that without ties, and with ties estimated from 100,000
  random relabellings (Monte Carlo, standard error 0.0007 at p = 0.05, said in the
  pair's note); never the normal approximation, which at 9+9 separated rounds gives
  10-17x the exact p. The ratio is the Hodges-Lehmann shift of the logs with
  the interval from inverting the exact test (distribution-free; none where n is too
  small for any interval to reach 95%).

Holm across all pairs of the group; Cliff's delta as the effect size, of the design the
test used: within rounds for a blocked pair (the share of rounds the one is above minus
the share below), of all values for an unpaired one.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from itertools import combinations
from typing import Any, Mapping

import numpy as np
from scipy import stats
from scipy.special import comb

from fslab.analysis.paired import PairedT
from fslab.analysis.significance import ALPHA, CONFIDENCE, MEANINGFUL, MIN_BLOCKS

MAGNITUDES = ((0.147, "negligible"), (0.33, "small"), (0.474, "medium"))  # Romano et al. 2006
BLOCKED_LOG = "paired t-test on within-round log ratios"
BLOCKED_DIFF = "paired t-test on within-round differences"
MANN_WHITNEY = "Mann-Whitney U"
SIGN_FLIP = "exact sign-flip test on within-round differences (they did not vary)"


def cliffs_delta(a: np.ndarray, b: np.ndarray) -> float:
    """P(b > a) - P(b < a): +1 when every b exceeds every a."""
    a_sorted = np.sort(a)
    greater = np.searchsorted(a_sorted, b, side="left").sum()          # a < b
    less = len(a) * len(b) - np.searchsorted(a_sorted, b, side="right").sum()   # a > b
    return float((greater - less) / (len(a) * len(b)))


def magnitude(delta: float) -> str:
    d = abs(delta)
    return next((name for bound, name in MAGNITUDES if d < bound), "large")


# Permutation p-values are enumerated up to this many arrangements (8+8 rounds: 12,870);
# beyond, without ties the exact null distribution of U is counted (no enumeration), and
# with ties MONTE_CARLO_PERMUTATIONS random relabellings estimate the same exact p.
MAX_EXACT_ARRANGEMENTS = 20_000
MONTE_CARLO_PERMUTATIONS = 100_000

def common_rounds(a_rounds: np.ndarray, b_rounds: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The rounds both levels ran, in order, with where each level has them (its values at
    those rounds are a[ia], b[ib]), when each ran at most once per round (else None: a
    round with two values of one level is no block)."""
    if len(np.unique(a_rounds)) != len(a_rounds) or len(np.unique(b_rounds)) != len(b_rounds):
        return None
    return np.intersect1d(a_rounds, b_rounds, assume_unique=True, return_indices=True)


def smallest_p(n_a: int, n_b: int, paired: bool = False) -> float:
    """The smallest two-sided p the pair's test can give at these sizes: Mann-Whitney's
    2 / C(n_a + n_b, n_a) (exact, no ties); none for the t-test (0)."""
    return 0.0 if paired else min(1.0, 2 / comb(n_a + n_b, n_a))


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


def pair_p_value(a: np.ndarray, b: np.ndarray) -> float:
    """The unpaired test's two-sided permutation p, never a normal approximation (which at
    9+9 separated rounds gives 10-17x the exact p): enumerated where the arrangements are
    few, counted from U's exact distribution without ties, Monte Carlo with ties beyond
    that (standard error sqrt(p(1-p)/100,000): 0.0007 at p = 0.05). Never below
    smallest_p(): the observed arrangement and its mirror are always as extreme."""
    return pair_p_detail(a, b)[0]


def pair_p_detail(a: np.ndarray, b: np.ndarray) -> tuple[float, str]:
    """(p, how it was computed: "exact" or "Monte Carlo, N permutations, ±se")."""
    if np.all(a == a[0]) and np.all(b == a[0]):
        return 1.0, "exact"
    arrangements = comb(len(a) + len(b), len(b))
    if arrangements <= MAX_EXACT_ARRANGEMENTS:
        return exact_mann_whitney_p(a, b), "exact"
    pooled = np.concatenate([a, b])
    if len(np.unique(pooled)) == len(pooled) and arrangements <= 1e15:
        return _counted_u_p(a, b), "exact"
    p = max(_monte_carlo_p(a, b), min(1.0, 2 / arrangements))
    se = math.sqrt(p * (1 - p) / MONTE_CARLO_PERMUTATIONS)
    return p, f"Monte Carlo, {MONTE_CARLO_PERMUTATIONS:,} permutations, ±{se:.1g}"


def _counted_u_p(a: np.ndarray, b: np.ndarray) -> float:
    """Exact two-sided p of U without ties, from U's null counts (_u_counts)."""
    m, n = len(a), len(b)
    u = float(np.sum(np.subtract.outer(b, a) > 0))      # pairs with b above a
    counts = _u_counts(m, n)
    far = np.abs(np.arange(m * n + 1) - m * n / 2) >= abs(u - m * n / 2) - 1e-9
    return float(min(1.0, counts[far].sum() / comb(m + n, m)))


def _monte_carlo_p(a: np.ndarray, b: np.ndarray) -> float:
    """(1 + relabellings at least as extreme) / (1 + relabellings), ties as midranks; the
    random stream is seeded by the values, so a report prints the same p every time."""
    pooled = np.concatenate([a, b])
    ranks = stats.rankdata(pooled)
    n, k = len(pooled), len(b)
    mean = k * (n + 1) / 2
    observed = abs(ranks[len(a):].sum() - mean)
    rng = np.random.default_rng(zlib.crc32(pooled.tobytes()))
    extreme, left = 0, MONTE_CARLO_PERMUTATIONS
    while left:
        chunk = min(left, 10_000)
        picks = rng.permuted(np.tile(ranks, (chunk, 1)), axis=1)[:, :k].sum(axis=1)
        extreme += int(np.sum(np.abs(picks - mean) >= observed - 1e-9))
        left -= chunk
    return (1 + extreme) / (1 + MONTE_CARLO_PERMUTATIONS)


@lru_cache(maxsize=256)
def _u_counts(m: int, n: int) -> np.ndarray:
    """How many of the C(m+n, m) arrangements give each U = 0 .. m*n (no ties): the
    coefficients of the Gaussian binomial [m+n choose m], built up one element at a time."""
    # f[j][u]: arrangements of i a's and j b's with statistic u, for the current i
    f = [np.zeros(m * n + 1) for _ in range(n + 1)]
    for j in range(n + 1):
        f[j][0] = 1.0
    for _ in range(1, m + 1):
        g = [np.zeros(m * n + 1) for _ in range(n + 1)]
        g[0][0] = 1.0
        for j in range(1, n + 1):
            # the largest of the pooled values is an a (adds j to U) or a b
            g[j] = g[j - 1].copy()
            g[j][j:] += f[j][:len(f[j]) - j]
        f = g
    return f[n]


def shift_interval(a: np.ndarray, b: np.ndarray,
                   confidence: float = CONFIDENCE) -> tuple[float, float, float, float]:
    """Hodges-Lehmann shift of b against a with the interval from inverting the exact
    Mann-Whitney test: (estimate, lo, hi, the interval's exact confidence). The interval
    is NaN when no pair of order statistics reaches `confidence` (e.g. 3 + 3 values)."""
    d = np.sort(np.subtract.outer(b, a).ravel())
    estimate = float(np.median(d))
    m, n = len(a), len(b)
    if comb(m + n, m) > 1e15:          # beyond exact counts: the normal approximation of U
        z = stats.norm.ppf(0.5 + confidence / 2)
        k = int(math.floor(m * n / 2 - z * math.sqrt(m * n * (m + n + 1) / 12)))
        if k < 1:
            return estimate, math.nan, math.nan, math.nan
        return estimate, float(d[k - 1]), float(d[-k]), confidence
    cdf = np.cumsum(_u_counts(m, n)) / comb(m + n, m)
    # [d_(k), d_(mn+1-k)] covers with 1 - 2 P(U <= k-1): the largest k that keeps it
    ok = np.nonzero(1 - 2 * cdf[: m * n // 2 + 1] >= confidence)[0]
    if ok.size == 0:
        return estimate, math.nan, math.nan, math.nan
    k = int(ok.max()) + 1
    return estimate, float(d[k - 1]), float(d[-k]), float(1 - 2 * cdf[k - 1])


@dataclass(frozen=True)
class PairTest:
    """The test of one pair (b against a): its p, the test and design chosen, the ratio b/a
    with its interval (NaN where the test has none) and that interval's confidence, the
    smallest p these n allow, the shift it tested (mean log ratio or difference, or the
    Hodges-Lehmann shift), the values it used, and `matched`: the two ran in the same
    rounds (enough rounds would compare them within rounds)."""
    p: float
    test: str
    design: str                 # "blocked" | "unpaired"
    paired: bool
    blocks: int
    ratio: float
    ratio_ci_lo: float
    ratio_ci_hi: float
    ratio_ci_level: float
    smallest_p: float
    shift: float
    a: np.ndarray
    b: np.ndarray
    matched: bool = False
    p_method: str = "exact"     # how the unpaired p was computed


def pair_test(a: np.ndarray, b: np.ndarray, a_rounds: np.ndarray | None = None,
              b_rounds: np.ndarray | None = None, pairable: bool = True) -> PairTest:
    """The test of one pair (b against a), chosen by the design as the module says.

    Returns p, test, design, paired, blocks, ratio (b/a) with its interval and that
    interval's confidence, smallest_p, the values the test used, and `matched`: the two
    ran in the same rounds (enough rounds would compare them within rounds)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    common = (common_rounds(np.asarray(a_rounds), np.asarray(b_rounds))
              if pairable and a_rounds is not None and b_rounds is not None else None)
    matched = common is not None and len(common[0]) >= 2
    if common is not None and len(common[0]) >= MIN_BLOCKS:
        _, ia, ib = common
        a_in, b_in = a[ia], b[ib]       # round by round
        blocked = _blocked(a_in, b_in)
        if blocked is not None:
            return replace(blocked, matched=True)
        if np.ptp(a_in) > 0 or np.ptp(b_in) > 0:
            # the rounds moved both alike and the difference did not move at all: the exact
            # sign-flip test of the within-round differences keeps the blocking
            return replace(_sign_flip(a_in, b_in), matched=True)
        a, b = a_in, b_in       # a deterministic quantity (the same value every round)
    return replace(_unpaired(a, b), matched=matched)


def _blocked(a: np.ndarray, b: np.ndarray) -> PairTest | None:
    logs = bool((a > 0).all() and (b > 0).all())
    d = np.log(b) - np.log(a) if logs else b - a
    t = PairedT.of(d)
    n, mean = t.n, t.mean
    if not t.sd > 1e-12 * max(1.0, float(np.abs(d).max())):
        return None
    p = t.p
    if logs:
        s_lo, s_hi = t.interval(CONFIDENCE)
        ratio, lo, hi = math.exp(mean), math.exp(s_lo), math.exp(s_hi)
    else:       # no ratio of a difference scale: the medians', without an interval
        med_a = float(np.median(a))
        ratio, lo, hi = (float(np.median(b)) / med_a if med_a else math.nan), math.nan, math.nan
    return PairTest(p=p, test=BLOCKED_LOG if logs else BLOCKED_DIFF, design="blocked",
                    paired=True, blocks=n, ratio=ratio, ratio_ci_lo=lo, ratio_ci_hi=hi,
                    ratio_ci_level=CONFIDENCE if logs else math.nan, smallest_p=0.0,
                    shift=mean, a=a, b=b)


def _sign_flip(a: np.ndarray, b: np.ndarray) -> PairTest:
    """Every round's difference the same (and not 0): of the 2^n sign flips of the
    differences, the two all-same-sign ones reach the observed mean: p = 2 / 2^n."""
    logs = bool((a > 0).all() and (b > 0).all())
    d = np.log(b) - np.log(a) if logs else b - a
    n = len(d)
    shift = float(d.mean())
    p = 1.0 if shift == 0 else min(1.0, 2 / 2 ** n)
    ratio = math.exp(shift) if logs else (float(np.median(b) / np.median(a)) if np.median(a) else math.nan)
    return PairTest(p=p, test=SIGN_FLIP, design="blocked", paired=True, blocks=n,
                    ratio=ratio, ratio_ci_lo=math.nan, ratio_ci_hi=math.nan,
                    ratio_ci_level=math.nan, smallest_p=min(1.0, 2 / 2 ** n), shift=shift,
                    a=a, b=b)


def _unpaired(a: np.ndarray, b: np.ndarray) -> PairTest:
    p, how = pair_p_detail(a, b)
    ratio = lo = hi = confidence = math.nan
    if (a > 0).all() and (b > 0).all():
        shift, s_lo, s_hi, confidence = shift_interval(np.log(a), np.log(b))
        ratio, lo, hi = math.exp(shift), math.exp(s_lo), math.exp(s_hi)
    else:       # the test's own estimate of the shift, on the values (its sign is the verdict's)
        shift = float(np.median(np.subtract.outer(b, a)))
        if np.median(a) != 0:
            ratio = float(np.median(b) / np.median(a))
    return PairTest(p=p, test=MANN_WHITNEY, design="unpaired", paired=False, blocks=0,
                    ratio=ratio, ratio_ci_lo=lo, ratio_ci_hi=hi, ratio_ci_level=confidence,
                    smallest_p=smallest_p(len(a), len(b)), shift=shift, a=a, b=b, p_method=how)


@dataclass(frozen=True)
class PairRow:
    """One pair of a group's levels (`other` against `baseline`, the first of the pair in
    the levels' order): a row of Analysis.pairs, its fields the frame's columns in this
    order. n_* are the values (or, counted, the pooled trials) each level had, median_* their
    medians (pooled rates), ratio = other / baseline with the test's interval (NaN where it
    has none) and that interval's confidence, shift the test's own estimate, change_pct
    the ratio as a percentage where the test compared ratios, delta Cliff's δ of the test's
    design; the fields from p_holm on are filled in by the Holm adjustment of its group."""
    baseline: str
    other: str
    n_baseline: int
    n_other: int
    test: str
    design: str
    paired: bool
    blocks: int
    p: float
    median_baseline: float
    median_other: float
    ratio: float
    ratio_ci_lo: float
    ratio_ci_hi: float
    ratio_ci_level: float
    matched: bool
    shift: float
    change_pct: float
    delta: float
    better: str
    smallest_p: float
    note: str
    p_holm: float = math.nan
    magnitude: str = ""
    significant: bool = False
    winner: str = ""
    verdict: str = ""
    # Holm-significant, but the estimated ratio within MEANINGFUL of 1: not separated
    # (significant is False), said "≈, within 1%"
    negligible: bool = False

    def columns(self, order: tuple[str, ...] | None = None) -> dict[str, Any]:
        """The row as the frame's columns: {field: value} in the fields' order (or `order`)."""
        return {name: getattr(self, name) for name in (order or PAIR_COLUMNS)}

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> PairRow:
        """The pair of one row of Analysis.pairs (a record of it; other columns ignored)."""
        return cls(**{name: record[name] for name in PAIR_COLUMNS})


PAIR_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(PairRow))


def compare_levels(samples: dict[str, tuple[np.ndarray, np.ndarray]], better: str | None,
                   pairable: bool, seed_key: tuple = ()) -> list[PairRow]:
    """All pairs of levels (in the given order: the first of a pair is its baseline).

    samples: level -> (values, rounds). Metrics without a direction are described,
    never ranked: they get no rows here.
    """
    if better not in ("higher", "lower"):
        return []
    rows = []
    levels = [lv for lv, (v, _) in samples.items() if len(v) > 0]
    medians = {lv: float(np.median(samples[lv][0])) for lv in levels}   # once, not per pair
    for a_name, b_name in combinations(levels, 2):
        (a, a_it), (b, b_it) = samples[a_name], samples[b_name]
        meds = medians[a_name], medians[b_name]
        if min(len(a), len(b)) < 2:
            rows.append(_row(a_name, b_name, a, b, meds, better, PairTest(
                p=math.nan, test="", design="", paired=False, blocks=0, ratio=math.nan,
                ratio_ci_lo=math.nan, ratio_ci_hi=math.nan, ratio_ci_level=math.nan,
                smallest_p=1.0, shift=math.nan, a=a, b=b),
                note="too few samples to test (need n >= 2 each)"))
            continue
        rows.append(_row(a_name, b_name, a, b, meds, better, pair_test(a, b, a_it, b_it, pairable)))
    return _holm(rows)


def _row(a_name: str, b_name: str, a: np.ndarray, b: np.ndarray, medians: tuple[float, float],
         better: str, t: PairTest, note: str = "") -> PairRow:
    med_a, med_b = medians
    ratio = t.ratio
    if t.design == "blocked" and len(t.a) < max(len(a), len(b)):
        note = f"paired on the {len(t.a)} rounds both ran"
    if t.p_method != "exact":
        note = note or f"p: {t.p_method}"
    return PairRow(
        baseline=a_name, other=b_name, n_baseline=len(a), n_other=len(b),
        test=t.test, design=t.design, paired=t.paired, blocks=t.blocks,
        p=t.p, median_baseline=med_a, median_other=med_b, ratio=ratio,
        ratio_ci_lo=t.ratio_ci_lo, ratio_ci_hi=t.ratio_ci_hi,
        ratio_ci_level=t.ratio_ci_level, matched=t.matched,
        shift=t.shift,
        # a percentage only where the test compared ratios (logs); else its shift says it
        change_pct=((ratio - 1) * 100 if not math.isnan(ratio) and t.test not in
                    (BLOCKED_DIFF,) and ((a > 0).all() and (b > 0).all()) else math.nan),
        delta=effect_size(a, b, t),
        better=better, smallest_p=t.smallest_p, note=note)


def effect_size(a: np.ndarray, b: np.ndarray, t: PairTest) -> float:
    """Cliff's delta, of the design the test used: within rounds for a blocked pair (the
    share of rounds b is above a minus the share it is below: drift shared by a round
    cancels, as in the test), across all values otherwise. Raw values across rounds
    would call a steady 10% gain under 20% drift 'negligible' beside a significant test."""
    if t.design == "blocked":
        return float(np.mean(np.sign(np.asarray(t.b, float) - np.asarray(t.a, float))))
    return cliffs_delta(a, b) if len(a) and len(b) else math.nan


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


def _holm(rows: list[PairRow]) -> list[PairRow]:
    """The pairs with their p-values Holm-adjusted together, and each pair's verdict."""
    tested = [i for i, r in enumerate(rows) if not math.isnan(r.p)]
    adjusted = dict(zip(tested, holm([rows[i].p for i in tested]))) if tested else {}
    out = []
    for i, r in enumerate(rows):
        p_holm = float(adjusted[i]) if i in adjusted else math.nan
        tiny = bool(p_holm < ALPHA) and within_meaningful(r.ratio)
        r = replace(r, p_holm=p_holm, significant=bool(p_holm < ALPHA) and not tiny,
                    negligible=tiny, magnitude=magnitude(r.delta) if not math.isnan(r.delta) else "")
        note = r.note
        if tiny:
            note = "; ".join(x for x in (note, f"{format_p(p_holm)} (Holm), but within "
                                         f"{MEANINGFUL:.0%}: not a meaningful difference") if x)
        if not note and r.smallest_p * len(tested) >= ALPHA:
            note = (f"n={r.n_baseline}+{r.n_other} cannot show a difference "
                    f"(smallest p={r.smallest_p:.2g})")
        r = replace(r, winner=_winner(r), verdict=verdict(r), note=note)
        out.append(r)
    return out


def within_meaningful(ratio: float) -> bool:
    """A ratio closer to 1 than the minimum meaningful difference (either way)."""
    return (isinstance(ratio, (int, float)) and math.isfinite(ratio) and ratio > 0
            and max(ratio, 1 / ratio) < 1 + MEANINGFUL)


def _winner(r: PairRow) -> str:
    """The better of a significant pair, by the direction of the test's own estimate
    (the within-round ratio when blocked), so it never contradicts the test."""
    if not r.significant:
        return ""
    up = effect_sign(r)
    if up == 0:
        return ""
    return r.other if (up > 0) == (r.better == "higher") else r.baseline


def effect_sign(r: PairRow) -> int:
    """+1 when the pair's test's own estimate (its shift: the mean within-round log ratio or
    difference, or the Hodges-Lehmann shift) puts `other` above `baseline`, -1 below, 0 level."""
    shift = r.shift
    if isinstance(shift, (int, float)) and not math.isnan(shift):
        return 0 if shift == 0 else (1 if shift > 0 else -1)
    if not math.isnan(r.ratio) and r.ratio != 1:
        return 1 if r.ratio > 1 else -1
    if r.median_other != r.median_baseline:
        return 1 if r.median_other > r.median_baseline else -1
    return 0 if math.isnan(r.delta) or r.delta == 0 else (1 if r.delta > 0 else -1)


def verdict(r: PairRow) -> str:
    """benchstat style: '+23.4% (p=0.002, Cliff's δ=0.81 large)', '≈, within 1%' when the
    test separated a difference under the minimum meaningful one, or '~' when not
    significant."""
    if r.negligible:
        return f"≈, within {MEANINGFUL:.0%}"
    if not r.significant:
        return "~"
    shift = r.shift
    change = (f"{r.change_pct:+.1f}%" if not math.isnan(r.change_pct)
              else f"{shift:+.4g}" if isinstance(shift, float) and not math.isnan(shift)
              else f"{r.median_other - r.median_baseline:+.4g}")
    return f"{change} ({format_p(r.p_holm)}, Cliff's δ={r.delta:.2f} {r.magnitude})"


def format_p(p: float) -> str:
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"
