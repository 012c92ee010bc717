"""What a decision is worth: P(best), the expected loss of each choice, and the smallest
difference the run could have found.

P(best) comes from the posterior of the candidates' mean log values given their rounds,
with rounds as blocks: each round's values are centred on the round's mean (drift shared
by the round cancels), and, where every candidate ran the same n rounds, the mean vector
is drawn from a multivariate t around the observed means with the within-round
covariance over n, on n - 1 degrees of freedom (the reference posterior of a normal mean
with unknown covariance; `posterior` says how candidates with fewer rounds enter). P(best) is the
share of draws in which a candidate is best. With 3 rounds the t has 2 degrees of freedom:
one candidate ahead in every round by a hair is not "100% best" (a Bayesian bootstrap over
rounds said so). The expected loss of choosing a candidate is the mean, over the same draws,
of the share of its own cost the draw's best saves: 0.02 = 2% of the best's throughput
lost, or, for a time or latency, 2% of the chosen one's time the best would not take
(1 - best / chosen). Both stay below 1, so the mean exists: "% more time than the best"
(chosen / best - 1) has no mean under a t posterior (no moment of exp(t) is finite), and
its Monte Carlo mean at 3 rounds came out anywhere from 4% to 36% for the same data.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import numpy as np
from scipy import stats

from fslab.analysis.paired import PairedT
from fslab.decide.race import leader

DRAWS = 4000
POWER = 0.8
# the power figures are at the noise's 70% upper confidence bound: at the point estimate,
# averaged over runs, the power at the printed figure was 0.62-0.72, not 0.80 (issue 47;
# noise on 2-9 degrees of freedom); at this bound it is 0.82-0.84 (bench/stats 6)
NOISE_BOUND = 0.7


@dataclass(frozen=True)
class Chance:
    """What choosing one candidate is worth: the posterior's P(best), and the expected
    share of its cost the best would save (NaN: the rounds cannot say)."""
    p_best: float
    expected_loss: float


def posterior(values: dict[str, dict[int, float]], labels: list[str], better: str,
              seed: int = 0) -> dict[str, Chance]:
    """label -> its Chance (P(best), expected loss) from `draws` (NaN where the rounds
    cannot say). P(best) is a share of DRAWS draws: its Monte Carlo standard error is
    sqrt(p (1 - p) / 4000), at most 0.008, and the same on every BLAS kernel (_factor)."""
    if len(labels) == 1:
        return {labels[0]: Chance(1.0, 0.0)}
    means = draws(values, labels, better, seed)
    if means is None:
        return {lv: Chance(math.nan, math.nan) for lv in labels}
    best = means.max(axis=1, keepdims=True)
    p_best = np.bincount(means.argmax(axis=1), minlength=len(labels)) / len(means)
    loss = 1 - np.exp(-(best - means))      # means are "higher is better" logs either way
    return {lv: Chance(float(p_best[i]), float(loss[:, i].mean()))
            for i, lv in enumerate(labels)}


def draws(values: dict[str, dict[int, float]], labels: list[str], better: str,
          seed: int = 0) -> np.ndarray | None:
    """DRAWS x len(labels) draws of the candidates' mean log values relative to a reference,
    "higher is better" either way (None where a candidate has under 2 rounds with it).
    Each candidate against a reference (the
    leader: _reference), on the rounds both ran, so a candidate retired early
    weighs with its own rounds and the others keep all of theirs.

    Candidate i's mean log ratio to the reference, d_i (se_i on n_i rounds), is drawn as
    d_i + se_i * w_i * s_i: w is a standard normal vector whose correlation for i, j is
    their ratios' on the rounds both ran (they share the reference's noise) times the
    overlap of their rounds |Ri & Rj| / sqrt(ni nj) (the correlation of two means over
    different rounds), each pair on its own shared rounds, so a candidate eliminated at
    round 3 does not reduce the others' to 3 rounds; and s_i = sqrt((n_i - 1) / chi2_{n_i - 1}) from one uniform
    for all (comonotone). With every candidate on the same rounds this is the multivariate
    t of the module doc (in distribution; the random stream differs)."""
    ref = _reference(values, labels, better)
    pairs = {lv: sorted(set(values[lv]) & set(values[ref])) for lv in labels}
    others = [lv for lv in labels if lv != ref]
    if any(len(pairs[lv]) < 2 for lv in others) or \
            any(values[lv][r] <= 0 for lv in labels for r in values[lv]):
        return None
    sign = 1.0 if better == "higher" else -1.0

    def ratios(lv: str, rounds: list[int]) -> np.ndarray:
        return sign * np.log([values[lv][r] / values[ref][r] for r in rounds])

    mean = np.array([ratios(lv, pairs[lv]).mean() for lv in others])
    n = np.array([len(pairs[lv]) for lv in others])
    se = np.array([np.std(ratios(lv, pairs[lv]), ddof=1) / math.sqrt(len(pairs[lv])) for lv in others])
    corr = np.eye(len(others))
    for i, a in enumerate(others):
        for j in range(i + 1, len(others)):
            b = others[j]
            both = sorted(set(pairs[a]) & set(pairs[b]))
            corr[i, j] = corr[j, i] = _correlation(ratios(a, both), ratios(b, both)) \
                * len(both) / math.sqrt(n[i] * n[j])
    corr = _shrunk(corr, float(np.mean(n)))
    root = _factor(corr)                                                  # corr = root root'
    rng = np.random.default_rng(zlib.crc32(repr((seed, labels, [pairs[lv] for lv in labels])).encode()))
    w = rng.standard_normal((DRAWS, len(others))) @ root.T                # draws x others
    q = rng.uniform(size=(DRAWS, 1))
    # one quantile per distinct degrees of freedom, not per draw and candidate
    dfs, which = np.unique(n - 1, return_inverse=True)
    scale = np.sqrt(dfs / stats.chi2.ppf(q, dfs))[:, which]
    means = np.zeros((DRAWS, len(labels)))                                # the reference at 0
    idx = [labels.index(lv) for lv in others]
    means[:, idx] = mean + se * w * scale
    return means


def _factor(corr: np.ndarray) -> np.ndarray:
    """The lower Cholesky factor of the nearest valid correlation matrix to `corr`.

    Pairwise estimates need not make a valid correlation matrix: its negative eigenvalues
    are cut (V max(L, 0) V', which does not depend on the basis chosen inside a repeated
    eigenvalue's space) and it is rescaled to a unit diagonal, so every w_i stays a standard
    normal. Then Cholesky, the one factor a positive definite matrix has. An eigenvector
    basis itself is no factor to draw with: where eigenvalues repeat (the shrunk matrix of
    many candidates has one eigenvalue k - 2 times) each BLAS kernel picks its own, and
    P(best) at 3 rounds of 12 candidates came out differently under OpenBLAS's Haswell and
    SkylakeX kernels (issue 47)."""
    vals, vecs = np.linalg.eigh((corr + corr.T) / 2)
    psd = (vecs * np.clip(vals, 0, None)) @ vecs.T
    d = np.sqrt(np.maximum(np.diag(psd), 1e-12))
    valid = psd / np.outer(d, d)
    k = len(valid)
    for jitter in (0.0, 1e-10, 1e-8, 1e-6):   # a cut matrix is singular: the least that makes it definite
        try:
            return np.linalg.cholesky((valid + jitter * np.eye(k)) / (1 + jitter))
        except np.linalg.LinAlgError:
            continue
    return np.linalg.cholesky((valid + 1e-4 * np.eye(k)) / (1 + 1e-4))


def _shrunk(corr: np.ndarray, rounds: float) -> np.ndarray:
    """The ratios' correlation, shrunk toward one common correlation (their mean) by
    (k - 1) / (k - 1 + n - 1) for k - 1 ratios on n rounds. Estimated from n rounds, the
    correlation of k - 1 ratios has rank at most n - 1: with 12 candidates at 3 rounds
    every draw lay in a plane, where a candidate that a t on 2 degrees of freedom gave
    13% to beat the leader could never be best (P(best) 0.0% beside the interval
    0.401-1.535; issue 36: 480 of 2,200 such candidates in 200 simulated looks). The
    common correlation keeps what the ratios share (the leader's noise in each) and makes
    the matrix full rank; the weight falls as rounds grow."""
    k = len(corr)
    if k < 2:
        return corr
    common = float(np.clip(corr[~np.eye(k, dtype=bool)].mean(), -1 / (k - 1) + 1e-6, 1 - 1e-6))
    target = np.full((k, k), common)
    np.fill_diagonal(target, 1.0)
    weight = (k - 1) / (k - 1 + max(rounds - 1, 0))
    return (1 - weight) * corr + weight * target


def _reference(values: dict[str, dict[int, float]], labels: list[str], better: str) -> str:
    """The best-looking of those that ran the most rounds (the leader: the survivors ran
    the most): where a candidate ran fewer rounds, its draws come from its ratio to the
    reference on the rounds both ran, and against the leader that is the comparison its
    P(best) turns on (through a noisier one, a candidate shown 11% behind the leader kept
    7% P(best))."""
    most = max(len(values.get(lv, {})) for lv in labels)
    return leader(values, [lv for lv in labels if len(values.get(lv, {})) == most], better)


def _correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r on the rounds two candidates share (0 where under 3, or one does not vary)."""
    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return 0.0
    return float(np.corrcoef(x, y)[0, 1])


def smallest_detectable(values: dict[str, dict[int, float]], winner: str, others: list[str],
                        alpha: float, comparisons: int, rounds: int | None = None) -> float:
    """The smallest ratio difference (as a fraction, 0.03 = 3%) the paired t-test on
    within-round log ratios finds with 80% power at this run's noise and rounds (or
    `rounds`, a projection at the noise so far), at the Holm-first (Bonferroni) level of
    `comparisons` tests: the median over the other candidates of each one's own figure
    (detectable), so one erratic candidate (zfs-fuse) does not make every pair look
    hopeless. NaN where no pair has 3 common rounds."""
    per = [x for x in detectable(values, winner, others, alpha, comparisons, rounds).values()
           if math.isfinite(x)]
    return float(np.median(per)) if per else math.nan


def detectable(values: dict[str, dict[int, float]], winner: str, others: list[str],
               alpha: float, comparisons: int, rounds: int | None = None,
               bound: float = NOISE_BOUND) -> dict[str, float]:
    """Per other candidate, smallest_detectable at its own pair's noise (the standard
    deviation of its log ratio to the winner on the rounds both ran, at least 3), taken at
    its `bound` upper confidence bound (0.5: about the estimate itself), so that at the
    figure the test's power is 80% or more unless the noise is above that bound."""
    out = {}
    for lv, t in _pairs(values, winner, others).items():
        # two-sided at alpha, Bonferroni over the comparisons: each side at half of its share
        out[lv] = float(math.exp(t.detectable(alpha / (2 * max(1, comparisons)), POWER, rounds,
                                              sd=t.noise_bound(bound))) - 1)
    return out


def retirable(values: dict[str, dict[int, float]], leader: str, others: list[str],
              level: float, delta: float, rounds: int, bound: float = 0.5) -> dict[str, float]:
    """Per other candidate, how far behind the leader (a fraction, 0.05 = 5% behind) it
    must be for the race's retirement (fslab.decide.race.Race._retire: its one-sided bound
    at `level` short of 1 + delta) to retire it with 80% power in `rounds` rounds, at its
    pair's noise so far taken at its `bound` upper confidence bound (0.2: the 80% lower
    bound, a noise the rounds do not rule out); 0 where even a level one is retired. The rule that decides a race is this one, not the
    elimination's two-sided test over every pair."""
    out = {}
    for lv, t in _pairs(values, leader, others).items():
        reach = t.detectable(level, POWER, rounds, sd=t.noise_bound(bound))
        out[lv] = max(0.0, float(math.exp(reach) / (1 + delta) - 1))
    return out


def _pairs(values: dict[str, dict[int, float]], winner: str, others: list[str]) -> dict[str, PairedT]:
    """Each other's paired t of its log ratios to `winner` (at least 3 common rounds)."""
    out = {}
    for lv in others:
        common = sorted(set(values[winner]) & set(values[lv]))
        if len(common) >= 3:
            out[lv] = PairedT.of_log_ratios([values[winner][r] for r in common],
                                            [values[lv][r] for r in common])
    return out
