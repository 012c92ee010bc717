"""Racing candidates on one measure: eliminate the significantly worse, round by round.

A race sees, per candidate, one value per round (every surviving candidate runs once per
round, on a fresh filesystem, in a seeded random order: fslab's scheduler). From
`min_rounds` on, after each round ("a look"):

1. The leader is the survivor with the best mean log value over the rounds every
   survivor ran (a difference of mean logs is exactly the mean within-round log ratio).
2. Every pair of survivors is compared by the answer's own test
   (fslab.analysis.pairwise.pair_test: a paired t-test on within-round log ratios),
   Holm-corrected over all pairs of this look, at this look's level: alpha spent over the
   race's looks by a Pocock-type spending function on the information fraction rounds /
   max_rounds (look_levels; the levels sum to alpha, so by the union bound over looks the
   chance of ever eliminating a candidate as good as another stays under alpha for the
   whole race; Holm within a look runs on the survivors of that look, a set earlier looks
   chose, so that part is argued, not proven: bench/decide measures the whole race's A/A
   error). A survivor significantly worse than any other survivor is eliminated.
3. A survivor that cannot be delta better than the leader (its one-sided bound of its
   ratio to the leader, at half the look's level split over the survivors compared, short
   of 1 + delta) is retired: it runs no more rounds, and stays a finalist, "not delta
   better than the leader of its round", never shown worse. (Against that leader: when
   the lead passes later to another, a retired one is bounded against the new leader only
   through the old, so it is said as it was shown.) Retiring the truly best when it leads
   every other by delta or more takes a wrong bound against whichever leader the data
   chose: at most alpha / 2 over all looks, by the union bound over the survivors of a
   look and the looks' levels; eliminating it takes the one-sided half of a two-sided
   test, at most alpha / 2 more: whenever the best leads by delta or more, a race ends
   with a wrong choice, other than by running out of rounds, with a chance of at most
   alpha. The survivors a look splits over are chosen by earlier looks, so (as for Holm
   within a look) this is argued, not proven; bench/decide measures it (a divisor fixed
   at the candidates - 1 would be proven, and costs 2-7 points of units there).
   Retiring one at a time, not waiting until every survivor is bounded at the same look,
   is what saves the units: the far ones stop while the close ones still run.
4. The race stops when one candidate remains running: the winner when none was retired,
   else the leader, each retired one not delta better than the leader of its round. When,
   at one look before any retirement, every survivor is bounded within delta on both
   sides of the leader, the survivors are shown equivalent (a tie, said as such); when
   the rounds or the time budget run out, the leader is the best guess and the survivors
   stay finalists; when every candidate still running failed, there is no decision.

Nothing here runs anything: the scheduler feeds values in and asks who runs next.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

import numpy as np
from scipy import stats

from fslab.analysis.paired import PairedT
from fslab.analysis.pairwise import PairTest, holm, pair_test, within_meaningful
from fslab.analysis.significance import ALPHA, MIN_BLOCKS
from fslab.plan.throttle import percent



class StopReason(Enum):
    """Why a race stopped: the one vocabulary of the race, the decision and its stages
    (the sentence is what people read, and what decisions stored before the name said)."""
    WINNER = "winner"                             # one left, none retired
    TIE = "tie"                                   # every survivor shown within delta
    LEADER_WITHIN_DELTA = "leader within delta"   # one left running, the others retired
    BUDGET = "budget"                             # rounds or --budget spent
    NONE_LEFT = "none left"                       # every candidate still running failed
    # stopped at the first look: the rounds' noise puts the smallest difference the race
    # could find far beyond --delta (RacePolicy; --keep-going races on)
    NOISE = "too noisy"
    INTERRUPTED = "interrupted"                   # the race never stopped (the run did)

    @property
    def sentence(self) -> str:
        return _SENTENCES[self]

    @classmethod
    def of_sentence(cls, text: str) -> "StopReason":
        """The reason a stored decision's sentence says (decisions stored before the name)."""
        return next(r for r, s in _SENTENCES.items() if s == text)


_SENTENCES = {StopReason.WINNER: "one left", StopReason.TIE: "within delta",
              StopReason.LEADER_WITHIN_DELTA: "none delta better than the leader",
              StopReason.BUDGET: "rounds or budget spent",
              StopReason.NOISE: "too noisy to decide delta",
              StopReason.NONE_LEFT: "the units of every candidate still running failed",
              StopReason.INTERRUPTED: "interrupted"}


@dataclass
class Elimination:
    label: str
    round: int
    leader: str
    ratio: float          # candidate / leader, within rounds (geometric mean)
    ratio_ci: tuple[float, float]
    p: float
    p_holm: float
    test: str
    alpha: float
    failed_because: str = ""      # its unit failed: a configuration that fails is no candidate

    @property
    def why(self) -> str:
        if self.failed_because:
            return f"round {self.round}: its unit failed ({self.failed_because})"
        return (f"round {self.round}: {ratio_words(self.ratio)} {self.leader} within rounds "
                f"({self.test}, Holm p={self.p_holm:.2g} < {self.alpha:.3g})")


@dataclass
class Retirement:
    """A survivor shown not delta better than the leader: it runs no more rounds."""
    label: str
    round: int
    leader: str
    ratio: float          # candidate / leader, within rounds (geometric mean)
    bound: float          # its one-sided bound on the winning side
    level: float
    delta: float
    better: str

    @property
    def why(self) -> str:
        side = "at most" if self.better == "higher" else "at least"
        return (f"round {self.round}: not {percent(self.delta)} better than {self.leader} "
                f"({ratio_words(self.ratio)} it within rounds; one-sided bound {side} "
                f"{self.bound:.3f}× at level {self.level:.2g}): retired, not shown worse")


def common_rounds(values: dict[str, dict[int, float]], labels: list[str]) -> list[int]:
    """The rounds every one of `labels` has a value in."""
    sets = [set(values.get(lv, {})) for lv in labels]
    return sorted(set.intersection(*sets)) if sets else []


def leader(values: dict[str, dict[int, float]], labels: list[str], better: str) -> str:
    """The race's one leader rule: of `labels`, the best mean log value over the rounds all
    of them ran (a difference of mean logs is exactly the mean within-round log ratio); a
    candidate with a value <= 0 there ranks last; ties go to the first in `labels`."""
    rounds = common_rounds(values, labels)
    sign = 1 if better == "higher" else -1
    means = {lv: sign * np.mean(np.log([values[lv][r] for r in rounds]))
             if rounds and all(values[lv][r] > 0 for r in rounds) else -math.inf for lv in labels}
    return max(labels, key=lambda lv: (means[lv], -labels.index(lv)))


def ratio_words(ratio: float) -> str:
    """0.93 -> '7.0% below', 1.08 -> '8.0% above'."""
    if not math.isfinite(ratio):
        return "not comparable with"
    pct = (ratio - 1) * 100
    return f"{abs(pct):.1f}% {'below' if pct < 0 else 'above'}"


SPENDING = ("pocock", "bonferroni", "obrien-fleming")


def spent(t: float, alpha: float, kind: str = "pocock") -> float:
    """The error spent by information fraction t (0..1) of the race's looks: Lan and
    DeMets' Pocock-type alpha * ln(1 + (e - 1) t), the O'Brien-Fleming-type
    2 - 2 Phi(z_{alpha/2} / sqrt t), or the even split alpha * t (Bonferroni)."""
    t = min(max(t, 0.0), 1.0)
    if t == 0:
        return 0.0
    if kind == "pocock":
        return alpha * math.log(1 + (math.e - 1) * t)
    if kind == "obrien-fleming":
        return float(2 - 2 * stats.norm.cdf(stats.norm.ppf(1 - alpha / 2) / math.sqrt(t)))
    if kind == "bonferroni":
        return alpha * t
    raise ValueError(f"unknown spending function {kind!r} (one of {', '.join(SPENDING)})")


def look_levels(alpha: float, min_rounds: int, max_rounds: int, kind: str = "pocock") -> list[float]:
    """Each look's level (rounds min_rounds..max_rounds): the error the spending function
    adds by that look, on the information fraction rounds / max_rounds (the first look
    spends what rounds 1..min_rounds carry). They sum to alpha exactly, so by the union
    bound over looks the whole race's chance of a false elimination stays under alpha
    whatever the looks' correlation (group-sequential boundaries proper would spend less
    by using it; this never relies on it)."""
    edges = [0] + list(range(min_rounds, max_rounds + 1))
    return [spent(b / max_rounds, alpha, kind) - spent(a / max_rounds, alpha, kind)
            for a, b in zip(edges, edges[1:])]


@dataclass
class Race:
    labels: list[str]
    better: str                      # "higher" | "lower"
    delta: float = 0.03
    alpha: float = ALPHA
    min_rounds: int = MIN_BLOCKS
    max_rounds: int = 10
    values: dict[str, dict[int, float]] = field(default_factory=dict)
    eliminated: dict[str, Elimination] = field(default_factory=dict)
    retired: dict[str, Retirement] = field(default_factory=dict)
    stopped: StopReason | None = None
    rounds_done: int = 0
    spending: str = "pocock"         # see spent()

    @property
    def looks(self) -> int:
        return max(1, self.max_rounds - self.min_rounds + 1)

    def level(self, round_no: int) -> float:
        """The level of the look after round `round_no` (see look_levels)."""
        j = min(max(round_no, self.min_rounds), self.max_rounds) - self.min_rounds
        return look_levels(self.alpha, self.min_rounds, self.max_rounds, self.spending)[j]

    @property
    def alpha_look(self) -> float:
        """The level of the latest look (the first before any)."""
        return self.level(self.rounds_done)

    @property
    def survivors(self) -> list[str]:
        """The candidates still running: neither eliminated nor retired."""
        return [lv for lv in self.labels if lv not in self.eliminated and lv not in self.retired]

    @property
    def finalists(self) -> list[str]:
        """The survivors and the retired: none of them shown worse than another."""
        return [lv for lv in self.labels if lv not in self.eliminated]

    @property
    def contenders(self) -> list[str]:
        """Every candidate P(best) is shared among: the finalists and those a test
        eliminated (one whose unit failed is no choice), each on the rounds it ran."""
        return [lv for lv in self.labels if self.values.get(lv)
                and not (lv in self.eliminated and self.eliminated[lv].failed_because)]

    def record(self, label: str, round_no: int, value: float) -> None:
        self.values.setdefault(label, {})[round_no] = value

    def look(self, round_no: int) -> list[Elimination]:
        """After round `round_no`: eliminate, retire, then decide whether to stop."""
        self.rounds_done = max(self.rounds_done, round_no)
        if self.stopped or round_no < self.min_rounds:
            return []
        out = self._eliminate(round_no)
        alive = self.survivors
        if len(alive) > 1:
            self._retire(alive, round_no)
            alive = self.survivors
        if not alive:               # every candidate still running failed
            self.stopped = StopReason.NONE_LEFT
        elif len(alive) == 1:
            self.stopped = StopReason.LEADER_WITHIN_DELTA if self.retired else StopReason.WINNER
        if not self.stopped and round_no >= self.max_rounds:
            self.stopped = StopReason.BUDGET
        return out

    def stop_for_budget(self) -> None:
        self.stopped = self.stopped or StopReason.BUDGET

    def stop_for_noise(self) -> None:
        self.stopped = self.stopped or StopReason.NOISE

    def leader(self, alive: list[str] | None = None) -> str:
        """The leader of `alive` (the survivors): see leader()."""
        return leader(self.values, alive or self.survivors, self.better)

    def common_rounds(self, labels: list[str]) -> list[int]:
        return common_rounds(self.values, labels)

    def _positive(self, lv: str, rounds: list[int]) -> bool:
        return all(self.values[lv][r] > 0 for r in rounds)

    def pair(self, leader: str, other: str) -> PairTest:
        rounds = self.common_rounds([leader, other])
        a = np.array([self.values[leader][r] for r in rounds])
        b = np.array([self.values[other][r] for r in rounds])
        return pair_test(a, b, np.array(rounds), np.array(rounds))

    def _eliminate(self, round_no: int) -> list[Elimination]:
        """Every pair of survivors tested, Holm over all of them: a candidate significantly
        worse than any other survivor cannot be the best. (Testing only against the
        leader is not enough: the leader is the best-looking of the round's values, so
        its comparisons are the most extreme of all pairs and Holm over k - 1 of them lets
        identical candidates go in 7.5% of 4-candidate races: bench/decide.)"""
        alive = self.survivors
        if len(alive) < 2:
            return []
        # a pair with fewer than 2 common rounds has no test (a candidate that measured
        # nothing usable keeps its place until its units fail or the race ends)
        pairs = [(a, b) for i, a in enumerate(alive) for b in alive[i + 1:]
                 if len(self.common_rounds([a, b])) >= 2]
        if not pairs:
            return []
        tests = [self.pair(a, b) for a, b in pairs]
        level = self.level(round_no)
        p_holm = holm([t.p for t in tests])
        lead = self.leader(alive)
        losers: dict[str, tuple] = {}
        for (a, b), t, ph in zip(pairs, tests, p_holm):
            # a pair apart by less than the minimum meaningful difference is not separated
            # here either (the answer shows it "≈, within 1%")
            if not ph < level or not math.isfinite(t.ratio) or within_meaningful(t.ratio):
                continue
            b_better = (t.ratio > 1) == (self.better == "higher")
            loser, winner = (a, b) if b_better else (b, a)
            ratio = t.ratio if loser == b else 1 / t.ratio
            lo, hi = t.ratio_ci_lo, t.ratio_ci_hi
            ci = (lo, hi) if loser == b else (1 / hi if hi else math.nan, 1 / lo if lo else math.nan)
            # said against the strongest evidence: the smallest p of its lost pairs
            if loser not in losers or ph < losers[loser][3]:
                losers[loser] = (winner, ratio, ci, ph, t)
        out = []
        for lv, (winner, ratio, ci, ph, t) in losers.items():
            if lv == lead:      # cannot happen with consistent estimates; never drop the leader
                continue
            e = Elimination(lv, round_no, winner, ratio, ci, t.p, float(ph), t.test, level)
            self.eliminated[lv] = e
            out.append(e)
        return out

    def _retire(self, alive: list[str], round_no: int) -> None:
        """Each survivor's one-sided bounds of its ratio to the leader, at this look's level
        split over the survivors compared (the leader is chosen by the data, so the
        comparison that matters, the truly best against the leader, may be any of them):
        one that cannot be delta better is retired. When every survivor is also within
        delta below the leader at one look, before any retirement, they are equivalent:
        the race stops with a tie."""
        lead = self.leader(alive)
        # half the look's level: a race that retires the best when it leads by delta has a
        # wrong bound, at most alpha / 2 over all its looks; an elimination of the best,
        # the one-sided half of a two-sided test, at most alpha / 2 more: P(correct
        # selection) >= 1 - alpha when the best leads by delta
        level = self.level(round_no) / 2 / max(1, len(alive) - 1)
        up = self.better == "higher"
        bounded, equivalent = {}, True
        for lv in alive:
            if lv == lead:
                continue
            worse, better = self.ratio_bounds(lead, lv, level)
            if not (math.isfinite(worse) and math.isfinite(better)):
                equivalent = False
                continue
            if better < 1 + self.delta if up else better > 1 - self.delta:
                bounded[lv] = better
            equivalent &= worse > 1 - self.delta if up else worse < 1 + self.delta
        if not self.retired and len(bounded) == len(alive) - 1 and equivalent:
            self.stopped = StopReason.TIE
            return
        for lv, better in bounded.items():
            self.retired[lv] = Retirement(lv, round_no, lead, float(self.pair(lead, lv).ratio),
                                          better, level, self.delta, self.better)

    def ratio_bounds(self, lead: str, other: str, level: float) -> tuple[float, float]:
        """One-sided (1 - level) bounds of other/leader by the answer's paired t on the
        within-round log ratios: (the bound on the losing side, the one on the winning
        side): (lower, upper) when higher is better, (upper, lower) when lower is."""
        rounds = self.common_rounds([lead, other])
        if len(rounds) < self.min_rounds or not (self._positive(lead, rounds) and self._positive(other, rounds)):
            return math.nan, math.nan
        t = PairedT.of_log_ratios([self.values[lead][r] for r in rounds],
                                  [self.values[other][r] for r in rounds])
        lo, hi = (math.exp(x) for x in t.one_sided_bounds(level))
        return (lo, hi) if self.better == "higher" else (hi, lo)
