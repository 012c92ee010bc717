"""The race as the scheduler sees it: after each round, who runs in the next one.

Everything is read back from the store (the records and unit outcomes of the run), and
the race is replayed from round 1 at every look, so a resumed decide reaches the same
eliminations and goes on where it stopped. The race's measure per candidate and round is
the workload's answer metric (or --metric); with several workloads (a job file's jobs,
several cases), the geometric mean of their values, each turned "higher is better"
first (1/x for a time or a latency), so every workload weighs alike.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pandas as pd

from fslab.decide.posterior import retirable
from fslab.decide.race import Elimination, Race, StopReason
from fslab.plan import Plan
from fslab.plan.throttle import percent
from fslab.records import level_label
from fslab.store import Store
from fslab.store.environment import DecideState, RunEnvironment
from fslab.metrics import answer_metrics, label as metric_label
from fslab.metrics.answer import job_answer
from fslab.analysis.groups import FS_FACTOR, level_labels
from fslab.analysis.names import OVER_100, difference_text


@dataclass
class Measure:
    """What the race compares: per workload the metrics used (several for a job file's
    job that reads and writes, or syncs: each direction's rate and the sync latency), and
    the direction."""
    metrics: dict[tuple, tuple[str, ...]] = field(default_factory=dict)   # (suite, case, params) -> metrics
    better: str = "higher"
    inverted: bool = False    # a time or latency among several metrics: raced as its inverse

    def names(self) -> list[str]:
        return list(dict.fromkeys(m for ms in self.metrics.values() for m in ms))

    @property
    def single(self) -> bool:
        """One metric of one workload: raced as it is, in its own direction."""
        return len(self.metrics) == 1 and len(self.names()) == 1

    def describe(self) -> str:
        labels = [metric_label(m) for m in self.names()]
        if self.single:
            return labels[0]
        what = "workloads of " if len(self.metrics) > 1 else ""
        # the inverse is said only where a time or latency is in it (pgbench's two tps
        # were said to be turned around)
        return (f"geometric mean over {what}{', '.join(sorted(set(labels)))}"
                + (" (each time or latency as its inverse: higher is better)" if self.inverted
                   else ""))


def choose_measure(records: pd.DataFrame, metric: str | None) -> Measure:
    """Each workload's answer metric (or `metric` where it was measured); a job file's
    job is raced on every metric its answer names (what it does: each direction it
    reads or writes, and its sync latency when it syncs), not only the first."""
    out = Measure()
    directions = set()
    ranked = records[records["better"].isin(["higher", "lower"])]
    # a metric some unit recorded as not comparable (fio's whole-millisecond timing of a
    # job done in under 100 ms) is no measure of that workload: the others' values of it
    # would be compared with what that unit said cannot be
    spoiled = set(records.loc[~records["better"].isin(["higher", "lower"]),
                              ["suite", "case", "params", "metric"]].itertuples(index=False, name=None))
    # a job file's jobs answer it; its workload-level row (CPU efficiency, fio's own use)
    # does not
    jobs = {(s, c) for s, c, p in zip(ranked["suite"], ranked["case"], ranked["params"])
            if _is_job(p)}
    for (suite, case, params), g in ranked.groupby(["suite", "case", "params"], sort=True):
        if (suite, case) in jobs and not _is_job(params):
            continue
        present = {m for m in g["metric"] if (suite, case, params, m) not in spoiled}
        chosen: tuple[str, ...]
        if metric:
            chosen = (metric,) if metric in present else ()
        else:
            named = answer_metrics(suite, case, params, present)
            chosen = tuple(named if job_answer(params, present) else named[:1])
        chosen = tuple(m for m in chosen if m in present)
        if chosen:
            out.metrics[(suite, case, params)] = chosen
            directions |= {g.loc[g["metric"] == m, "better"].iloc[0] for m in chosen}
    if out.single and directions:
        out.better = directions.pop()
    else:
        out.inverted = "lower" in directions
    return out


def _is_job(params: str | None) -> bool:
    """A job file's job (its params name the job), not the file's workload-level row."""
    import orjson
    try:
        return "job" in orjson.loads(params or "{}")
    except (orjson.JSONDecodeError, TypeError):
        return False


def race_values(records: pd.DataFrame, measure: Measure) -> dict[str, dict[int, float]]:
    """label -> round -> the race's value (see the module doc)."""
    if records.empty or not measure.metrics:
        return {}
    r = records.assign(level=level_labels(records, FS_FACTOR))
    # only values with a direction: a unit's value it recorded as not comparable leaves its
    # round incomplete (no block), never turned into something else
    keep = [m in measure.metrics.get((s, c, p), ()) and b in ("higher", "lower") for s, c, p, m, b in
            zip(r["suite"], r["case"], r["params"], r["metric"], r["better"])]
    r = r[keep]
    if r.empty:
        return {}
    value = r["value"].astype(float)
    if not measure.single:    # every value "higher is better" before they are combined
        value = value.where(r["better"] != "lower", 1 / value)
    r = r.assign(value=value)
    workloads = sum(len(ms) for ms in measure.metrics.values())
    out: dict[str, dict[int, float]] = {}
    for (level, it), g in r.groupby(["level", "iteration"], sort=True):
        if len(g) < workloads or (g["value"] <= 0).any():
            continue       # a round this candidate did not finish whole is no block
        out.setdefault(level, {})[int(it)] = float(np.exp(np.log(g["value"]).mean()))
    return out


class Printer(Protocol):
    """Where a decide's lines go: Rich's Console, or anything printing alike (bench/decide's
    quiet one); fslab/decide imports no console."""
    def print(self, *objects: Any, **kw: Any) -> None: ...


class RacePolicy:
    """The scheduler's rounds_policy for a decide."""

    def __init__(self, plan: Plan, store: Store, console: Printer, min_rounds: int, first: int = 0,
                 remember: dict | None = None) -> None:
        """`remember`: a DecideState patch of the decide's settings (the first stage's)."""
        self.plan, self.store, self.console = plan, store, console
        self.min_rounds = min_rounds
        # a later stage's rounds come after the earlier stages' (stored rounds first+1, ...)
        self.first = first
        self.remember = remember      # the decide's own settings, stored for --resume
        self._run_id: str | None = None     # set by the session before the run executes
        self.said: set[str] = set()

    @property
    def run_id(self) -> str:
        assert self._run_id is not None, "the session sets the run before the first round"
        return self._run_id

    @run_id.setter
    def run_id(self, run_id: str) -> None:
        self._run_id = run_id
        if self.remember:     # before the first unit: an interrupted decide resumes with them
            self.store.update_environment(run_id, self.remember)
            self.remember = None

    def replay(self, upto: int) -> tuple[Race, Measure]:
        """The race as the store says it went, rounds 1..upto."""
        return replay(self.store, self.run_id, self.plan, self.min_rounds, upto - self.first,
                      first=self.first)

    def after_round(self, it: int, pairs: list) -> list:
        race, _ = self.replay(it)
        for verb, gone in (("eliminated", race.eliminated), ("retired", race.retired)):
            for e in gone.values():
                if e.label not in self.said:
                    self.said.add(e.label)
                    self.console.print(f"{verb} {e.label}: {e.why}", markup=False, highlight=False)
        # a stage's first min_rounds rounds always run (a later stage starts only while
        # the budget is not spent)
        if not race.stopped and it - self.first >= self.min_rounds and self._over_budget(it):
            self.store.update_environment(self.run_id, DecideState.budget_stop_patch(self.first, it))
            race.stop_for_budget()
        if not race.stopped and it - self.first == self.min_rounds:
            said = reach(race)
            if said:
                words, far = said
                self.console.print(words, markup=False, highlight=False)
                if far and not self.plan.race.keep_going:
                    self.store.update_environment(
                        self.run_id, DecideState.noise_stop_patch(self.first, it, words))
                    race.stop_for_noise()
        if race.stopped:
            return []
        alive = set(race.survivors)
        return [p for p in pairs if p[0].label in alive]

    def most_units(self, pairs: list) -> int:
        """The most units this stage can run: every candidate and case in every round."""
        return len(pairs) * self.plan.race.max_rounds

    def _over_budget(self, it: int) -> bool:
        budget = self.plan.race.budget_seconds
        if not budget:
            return False
        units = [u for u in self.store.units(self.run_id) if u.get("started") and u.get("finished")]
        spent = sum(u["finished"] - u["started"] for u in units)
        per_round = spent / max(1, it)
        return spent + per_round > budget


# the first look stops the race when the median lead the retirement needs is more than
# this many times --delta and some candidate is closer to the leader than that: the race
# could then decide only about candidates several deltas behind, and its answer would be
# a tie the rounds could not separate (issue 36: "about 47.6% to 5025.5%, median 412.6%"
# at --delta 3%, then 14 more minutes and two stages)
FAR_BEYOND = 3.0
# ... and it judges at the noise's 80% lower confidence bound (a noise the first rounds do
# not rule out): from 2 degrees of freedom the estimate itself is twice the truth in 2% of
# races, and a stop on it ends races that would have decided
QUIETEST = 0.2


def reach(race: Race) -> tuple[str, bool] | None:
    """At the first look, what the race can hope to decide, judged by the rule that
    decides it (the retirement: a candidate's one-sided bound against the leader short of
    1 + delta, at the last look's level split as Race._retire splits it): per candidate,
    how far the leader must lead it for the last look to retire it with 80% power at its
    own noise so far; and whether the median of that is far beyond --delta (FAR_BEYOND).
    (Judged by the elimination's two-sided test over every pair, it stopped races that
    went on to decide: a best 5% ahead at 3% own noise, 8 candidates, was stopped in 45%
    of races, of which 46% would have decided correctly; issue 47.) None when there is
    nothing to say."""
    alive = [lv for lv in race.survivors if race.values.get(lv)]
    if len(alive) < 2:
        return None
    lead = race.leader(alive)
    others = [lv for lv in alive if lv != lead]
    level = race.level(race.max_rounds) / 2 / max(1, len(others))
    per = retirable(race.values, lead, others, level, race.delta, race.max_rounds, QUIETEST)
    if not per:
        return None
    median = float(np.median(list(per.values())))
    lo, hi = min(per, key=per.__getitem__), max(per, key=per.__getitem__)
    if per[lo] >= OVER_100:    # "about 10703.3% (ext4) to 11288.5% (xfs:noatime)" was printed
        span = "over 100× (every candidate)"
    elif per[hi] == 0:
        span = "any margin, a level one too"
    elif len(per) == 1:
        span = f"about {_lead(per[lo])} ({lo})"
    else:
        span = (f"about {_lead(per[lo])} ({lo}) to {_lead(per[hi])} ({hi}), median "
                f"{_lead(median)}")
    words = (f"at the noise of its first {race.min_rounds} rounds (the least they allow: its "
             f"{1 - QUIETEST:.0%} lower bound), {race.max_rounds} rounds "
             f"can show a candidate not {percent(race.delta)} better than the leader (and "
             f"retire it) with 80% power when the leader leads it by {span}, each at its "
             f"own noise (--delta {percent(race.delta)})")
    # a candidate already further behind than that can still be retired (or shown worse)
    # in the rounds left: the race goes on while one such is there for every one it
    # could not decide about
    sign = 1 if race.better == "higher" else -1
    gap = {}
    for lv in per:
        common = race.common_rounds([lead, lv])
        gap[lv] = math.expm1(sign * float(np.mean(np.log([race.values[lead][r] / race.values[lv][r]
                                                             for r in common]))))
    hopeless = [lv for lv in per if gap[lv] < per[lv]]
    far = median > FAR_BEYOND * race.delta and bool(hopeless)
    # the --delta at which a level candidate would be retired: the median reach put on delta
    enough = (1 + median) * (1 + race.delta) - 1
    if far:
        words += (f": more than {FAR_BEYOND:g}x --delta, so this machine and profile cannot "
                  f"decide a {percent(race.delta)} difference; " + advice(enough)
                  + "; stopped here (--keep-going races on anyway)")
    elif median > 0:
        words += ("; candidates closer to the leader than that will likely be left in a tie "
                  "the rounds could not separate (more --max-rounds decides closer ones; "
                  + advice(enough) + ")")
    return words, far


def _lead(x: float) -> str:
    """A lead the retirement needs: 0 is any lead, a level candidate included."""
    return "any lead (even none)" if x == 0 else difference_text(x)


def advice(median: float) -> str:
    """What the user can type about a reach of `median`: a --delta the flag accepts (a
    fraction below 1), or, past that, what else would make the rounds quieter."""
    suggest = math.ceil(median * 100) / 100
    if suggest < 1:
        return (f"--delta {suggest:.2f} asks only what these rounds can show, and ends "
                "the race sooner")
    return ("no --delta can ask that much (it is a fraction below 1): a longer runtime "
            "(the job's runtime= or the suite's duration, or --profile standard), more "
            "--max-rounds, or a quieter "
            "machine")


def replay(store: Store, run_id: str, plan: Plan, min_rounds: int, upto: int | None = None,
           first: int = 0) -> tuple[Race, Measure]:
    """The race of one stage: its stored rounds first+1 .. first+max_rounds, numbered
    from 1 (a later stage's rounds are fresh: no earlier stage's round is in it)."""
    d = plan.race
    labels = [f.label for f in plan.filesystem]
    rows = store.records(run_id)
    records = rows[(rows["iteration"] > first) & (rows["iteration"] <= first + d.max_rounds)] \
        if not rows.empty else rows
    records = records.assign(iteration=records["iteration"] - first) if not records.empty else records
    measure = choose_measure(records, d.metric)
    values = race_values(records, measure)
    units = [u for u in store.units(run_id) if first < int(u["iteration"]) <= first + d.max_rounds]
    last = max([r for v in values.values() for r in v] + [int(u["iteration"]) - first for u in units],
               default=0)
    upto = last if upto is None else min(upto, d.max_rounds)
    race = Race(labels, measure.better, delta=d.delta, min_rounds=min_rounds,
                max_rounds=d.max_rounds)
    failed = {(lv, r - first): why for (lv, r), why in _failed_rounds(store, run_id).items()}
    state = RunEnvironment.of_run(store.run(run_id)).decide
    budget_stop = state.budget_stop_after(first)
    budget_stop = None if budget_stop is None else budget_stop - first
    noise_stop = state.noise_stop_after(first)
    noise_stop = None if noise_stop is None else noise_stop - first
    for r in range(1, upto + 1):
        for lv in race.survivors:
            if (lv, r) in failed:
                race.eliminated[lv] = Elimination(lv, r, "", math.nan, (math.nan, math.nan),
                                                  math.nan, math.nan, "", 0.0,
                                                  failed_because=failed[(lv, r)])
            elif r in values.get(lv, {}):
                race.record(lv, r, values[lv][r])
        race.look(r)
        if race.stopped:
            break
        if budget_stop is not None and r >= budget_stop:
            race.stopped = StopReason.BUDGET
            break
        if noise_stop is not None and r >= noise_stop:
            race.stop_for_noise()
            break
    return race, measure


def _failed_rounds(store: Store, run_id: str) -> dict[tuple[str, int], str]:
    out: dict[tuple[str, int], str] = {}
    for u in store.units(run_id):
        if u["status"] == "failed":
            label = level_label(u["fs"], u["variant"])
            out.setdefault((label, int(u["iteration"])), (u.get("message") or "failed").splitlines()[0][:200])
    return out
