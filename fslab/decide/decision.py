"""The decision a person can act on, from a decide's store: the winner (or the tie),
for every candidate its ratio to the winner with its interval, P(best), the expected
loss of choosing it, why each eliminated one went, the smallest difference this run
could have found, units run against a full factorial, and what to type."""
from __future__ import annotations

import math
from dataclasses import dataclass

from fslab import filesystems
from fslab.decide.posterior import Chance, posterior, smallest_detectable
from fslab.decide.policy import replay
from fslab.decide.race import Race, StopReason
from fslab.decide.result import CandidateResult, Decision, StageSummary, Verdict
import pandas as pd

from fslab.plan import FilesystemSpec, Plan
from fslab.store import Store
from fslab.records import level_label
from fslab.store.environment import RunEnvironment
from fslab.analysis.groups import FS_FACTOR, level_labels
from fslab.analysis.names import OVER_100, bound_text, difference_text, ratio_text
from fslab.plan.throttle import percent


def decision(store: Store, run_id: str, plan: Plan, min_rounds: int, first: int = 0) -> Decision:
    """The decision of one stage: `plan`'s candidates on the stored rounds first+1, ..."""
    race, measure = replay(store, run_id, plan, min_rounds, first=first)
    d = plan.race
    alive = race.survivors
    measured = [lv for lv in alive if race.values.get(lv)]
    leader = race.leader(measured) if measured else None
    # P(best) shared among every candidate measured (the eliminated too: a lone survivor
    # is not "100% best" beside one a test removed at round 3), each on its own rounds
    post = posterior(race.values, race.contenders, race.better, seed=plan.run.seed) if measured else {}
    units = [u for u in store.units(run_id) if first < int(u["iteration"]) <= first + d.max_rounds
             and level_label(u["fs"], u["variant"]) in race.labels]
    rounds = max((int(u["iteration"]) - first for u in units), default=0)
    specs = {f.label: f for f in plan.filesystem}
    others = [lv for lv in race.labels if lv != leader and race.values.get(lv)]
    k = len(race.labels)      # the race tests every pair of survivors: Holm's first step
    stopped_early = race.stopped
    # a race stopped at its first look has one figure, its reach, said in cannot_decide
    mde = (smallest_detectable(race.values, leader, others, race.alpha_look, max(1, k * (k - 1) // 2))
           if leader and stopped_early is not StopReason.NOISE else math.nan)
    records = store.records(run_id)
    if not records.empty:
        records = records[(records["iteration"] > first) & (records["iteration"] <= first + d.max_rounds)]
    amplification = _medians(records, "write_amplification")
    stopped = race.stopped or StopReason.INTERRUPTED
    rows = [_candidate(lv, race, leader, post, specs[lv], d.candidates.get(lv, {}), stopped,
                       amplification.get(lv)) for lv in race.labels]
    rows.sort(key=lambda r: (r.eliminated_round is not None, -(r.eliminated_round or 0),
                             -(r.p_best or 0)))
    # more than one left: a tie, either shown within delta (equivalent) or only not
    # separated when the rounds or the budget ran out (said apart: the first is a finding,
    # the second the limit of this run, whose smallest detectable difference says how far)
    # the retired are in the tie when it ended so (none of them delta better than the
    # leader), not when the rounds ran out (then the tie is of the survivors, and each
    # retired one's line says what it was shown)
    tied = race.finalists if stopped in (StopReason.LEADER_WITHIN_DELTA, StopReason.TIE) else alive
    ties = tied if len(tied) > 1 else []
    env = RunEnvironment.of_run(store.run(run_id)).decide
    return Decision(
        run=run_id, verdict=Verdict.of_stop(stopped), leader=leader, ties=tuple(ties),
        equivalent=stopped is StopReason.TIE, stopped=stopped, finalists=tuple(race.finalists),
        metric=measure.describe(), better=race.better,
        metrics={f"{s}:{c} {p}": ", ".join(m) for (s, c, p), m in measure.metrics.items()},
        delta=d.delta, max_rounds=d.max_rounds, alpha=race.alpha, alpha_per_look=race.alpha_look,
        candidates=tuple(rows), mde=_num(mde), rounds=rounds,
        units_run=sum(1 for u in units if u["status"] in ("done", "failed")),
        # every candidate in every round up to the race's maximum: what a fixed design costs
        units_full_factorial=len(race.labels) * d.max_rounds * _cases(units),
        left_out=tuple(d.left_out),
        # the commands are a decision's, or only the leader's of an undecided race
        commands=tuple(_commands(specs[leader]) if leader and not specs[leader].throttle else []),
        # what the race showed enough to act on: a winner, a tie shown within delta, or a
        # leader the others were shown not delta better than; else the leader is a best guess
        decided=stopped in (StopReason.WINNER, StopReason.TIE, StopReason.LEADER_WITHIN_DELTA),
        cannot_decide=env.noise_why(first) if stopped is StopReason.NOISE else "",
        traded=tuple(r.label + ": " + r.trades for r in rows
                     if r.label in (ties or [leader or ""]) and r.safety == "trade"))


def _candidate(lv: str, race: Race, leader: str | None, post: dict[str, Chance],
               spec: FilesystemSpec, info: dict[str, str], stopped: StopReason,
               amplification: float | None
               ) -> CandidateResult:
    """One candidate's line of the decision."""
    p_best = expected_loss = ratio = None
    ratio_ci: tuple[float | None, float | None] = (None, None)
    eliminated_round = retired_round = None
    if lv in post:
        p_best, expected_loss = _num(post[lv].p_best), _num(post[lv].expected_loss)
    if leader and lv != leader and race.values.get(lv):
        t = race.pair(leader, lv)
        ratio, ratio_ci = _num(t.ratio), (_num(t.ratio_ci_lo), _num(t.ratio_ci_hi))
    elif lv == leader:
        ratio, ratio_ci = 1.0, (1.0, 1.0)
    if lv in race.eliminated:
        eliminated_round, why = race.eliminated[lv].round, race.eliminated[lv].why
    elif lv in race.retired:
        retired_round, why = race.retired[lv].round, race.retired[lv].why
    elif lv == leader:
        why = "winner" if stopped is StopReason.WINNER else "leader"
    else:
        why = ("within delta of the leader" if stopped is StopReason.TIE else
               "not shown worse, and not delta better than the leader"
               if stopped is StopReason.LEADER_WITHIN_DELTA else
               "not separated from the leader when the race stopped")
    return CandidateResult(
        label=lv, fs=spec.name, options=spec.options_text, changed=info.get("changed", ""),
        safety=info.get("safety", "safe"), trades=info.get("trades", ""),
        effect=info.get("effect", ""), unknown=info.get("unknown", ""),
        rounds=len(race.values.get(lv, {})), p_best=p_best, expected_loss=expected_loss,
        ratio=ratio, ratio_ci=ratio_ci, eliminated_round=eliminated_round,
        retired_round=retired_round, why=why,
        # a benchmark clone slowed by this fraction (bench/decide), never to be typed
        throttle=spec.throttle,
        # device bytes written per byte fio wrote (the device counters of its units)
        write_amplification=_num(amplification))


def _medians(records: pd.DataFrame, metric: str) -> dict[str, float]:
    """label -> median of `metric` over its units (all workloads)."""
    r = records[records["metric"] == metric]
    if r.empty:
        return {}
    return r.assign(level=level_labels(r, FS_FACTOR)).groupby("level")["value"].median().to_dict()


def _cases(units: list[dict]) -> int:
    """Units per candidate and round (the workload's cases)."""
    per: dict[tuple[str, str, int], set[tuple[str, str, str]]] = {}
    for u in units:
        per.setdefault((u["fs"], u["variant"], int(u["iteration"])), set()).add((u["suite"], u["case"], u["params"]))
    return max((len(v) for v in per.values()), default=1)


def _commands(spec: FilesystemSpec) -> list[str]:
    return filesystems.get(spec.name).apply_commands(spec)


def _num(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else float(x)


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:.1f}%"


def chance(p: float | None) -> str:
    """P(best) at the precision its rounds support: whole percents (a posterior on 2-9
    degrees of freedom, 4,000 draws), "< 1%" and "> 99%" at the ends, never "0.0%"
    beside an interval that reaches past the leader."""
    if p is None:
        return "—"
    return "< 1%" if p < 0.01 else "> 99%" if p > 0.99 else f"{round(p * 100):.0f}%"


def text(dec: Decision) -> list[str]:
    """The decision in plain lines, the terminal's and the Markdown's."""
    amp = any(r.write_amplification is not None for r in dec.candidates)
    lines = narrative(dec)
    ref = "winner" if dec.verdict is Verdict.WINNER else "leader"     # no winner: the leader
    lines.append(f"  candidate                      ratio to {ref:<6} (95% CI)   P(best)  exp. loss"
                 + ("  write ampl." if amp else "") + "  status")
    for r in dec.candidates:
        c = cells(r, dec.leader)
        lines.append(f"  {r.label:<30} {c.ratio:<26} {c.p_best:>7}  {c.expected_loss:>9}"
                     + (f"  {c.write_amplification:>11}" if amp else "") + f"  {c.status}")
    return lines + [f"  {t}" for t in tail(dec)]


def narrative(dec: Decision) -> list[str]:
    """What raced and what it found, before the candidates' table: each stage's line, the
    verdict, and the rounds and units it took."""
    lines = []
    stages = dec.stages
    if len(stages) > 1:
        for s in stages:
            lines += stage_lines(s)
        lines.append(f"Final (stage {len(stages)}, the last stage's candidates only):")
    lines.append(verdict_line(dec))
    said = (f"  {dec.rounds} rounds" + (" in the last stage" if len(stages) > 1 else "")
            + f", {dec.units_run} units run"
            + (f" in all {len(stages)} stages" if len(stages) > 1 else "")
            + f" (every candidate in all {dec.max_rounds} rounds"
            + (" of its stage" if len(stages) > 1 else "")
            + f": {dec.units_full_factorial})")
    # a race stopped at its first look said what its rounds can reach in the line above:
    # one figure, named once (a pgbench decide printed "803.2%" here beside "about 41.1%")
    if not dec.cannot_decide:
        said += (f"; smallest difference this " + ("stage" if len(stages) > 1 else "run")
                 + f" could find with 80% power: {reach_text(dec.mde, dec.rounds)}")
    lines.append(said)
    return lines


def reach_text(x: float | None, rounds: int) -> str:
    """The smallest detectable difference in words: a percent up to 900%, a ratio from 10×
    ("8752.4%" is 89×), and past 100× no digits (3 rounds of 27 candidates, Holm over 351
    pairs on 2 degrees of freedom, printed "105603587209214.8%": true of the model, and
    nothing a person can read)."""
    if x is not None and x >= OVER_100:
        return f"over 100× ({rounds} rounds cannot separate anything closer)"
    if x is not None and x >= 9:
        return f"{difference_text(x)} (a {x:.0%} difference)"
    return pct(x)


def verdict_line(dec: Decision) -> str:
    """The one sentence that says what to choose, and how sure."""
    if dec.verdict is Verdict.UNDECIDED:
        return (f"Cannot decide at --delta {percent(dec.delta)} ({dec.metric}): "
                f"{dec.cannot_decide or 'the rounds are too noisy'}; leader after "
                f"{dec.rounds} rounds {dec.leader}, a best guess, not shown better")
    if dec.leader is None:
        return f"No decision: {dec.stopped.sentence} (each candidate's line says why)"
    if dec.verdict is Verdict.WINNER:
        return (f"Winner: {dec.leader} — the only candidate left ({dec.metric}, "
                f"{dec.better} is better)")
    if dec.verdict is Verdict.TIE and dec.equivalent:
        return (f"Tie within {percent(dec.delta)}: {', '.join(dec.ties)} — any of them "
                f"(leader {dec.leader}); {dec.metric}")
    if dec.verdict is Verdict.TIE and dec.stopped is StopReason.LEADER_WITHIN_DELTA:
        others = [lv for lv in dec.ties if lv != dec.leader]
        return (f"Choose the leader {dec.leader}: each of {', '.join(others)} was shown "
                f"not {percent(dec.delta)} or more better than the leader of the round it "
                f"stopped running in (by a bound wrong with a chance under "
                f"{dec.alpha / 2:.1%} over the race: docs/decide.md; its line names that "
                f"leader and how far behind it was); none was shown worse either, in "
                f"{dec.rounds} rounds; {dec.metric}")
    if dec.verdict is Verdict.TIE:
        return (f"Tie: {', '.join(dec.ties)} — no test separated them in {dec.rounds} "
                f"rounds, but they were not shown to be within {percent(dec.delta)} of each "
                f"other either (see the smallest difference below); leader {dec.leader}; "
                f"{dec.metric}")
    return (f"No single winner ({dec.verdict.value}): finalists {', '.join(dec.finalists)}; "
            f"best guess {dec.leader} ({dec.metric})")


@dataclass(frozen=True)
class Cells:
    """One candidate's row as words (the terminal's table and the HTML's)."""
    ratio: str                  # to the leader, with its 95% CI
    p_best: str
    expected_loss: str
    write_amplification: str
    status: str


def cells(r: CandidateResult, leader: str | None) -> Cells:
    """One candidate's row as words: ratio to the leader (95% CI), P(best), expected loss,
    write amplification and status."""
    lo, hi = r.ratio_ci
    ratio = ("—" if r.ratio is None else f"{ratio_text(r.ratio)}"
             + (f" ({bound_text(lo)}–{bound_text(hi)})" if lo is not None and hi is not None
                and r.label != leader else ""))
    status = r.why + (f"; trades {r.trades}" if r.safety == "trade" else "") + (
        f"; {r.unknown}" if r.unknown else "") + (
        f"; a planted slowdown (throttled {percent(r.throttle)}), not a configuration"
        if r.throttle else "")
    wa = r.write_amplification
    return Cells(ratio=ratio, p_best=chance(r.p_best),
                 expected_loss="—" if r.expected_loss is None else pct(r.expected_loss),
                 write_amplification="—" if wa is None else f"{wa:.2f}×", status=status)


def tail(dec: Decision) -> list[str]:
    """After the table: what was traded, what to type, what did not race and why."""
    lines = [f"traded: {t}" for t in dec.traded]
    apart = [r.label for r in dec.candidates if r.label != dec.leader
             and r.eliminated_round is None and _leaves_out_1(r.ratio_ci)]
    if apart:
        level = dec.alpha_per_look
        lines.append(f"{', '.join(apart)}: a 95% interval that leaves out 1 is not a separation "
                     f"here: the race separates by Holm over every pair at its look's level"
                     + (f" ({level:.2g} at its last look)" if level else "")
                     + ", which plain intervals are not")
    lead = next((r for r in dec.candidates if r.label == dec.leader), None)
    if lead and lead.throttle:
        lines.append(f"nothing to apply: {lead.label} is a benchmark clone throttled by "
                     f"{percent(lead.throttle)} (a planted slowdown), not a configuration")
    if dec.commands and dec.decided:
        lines.append("to apply it (a real device; fslab measured on loop images):")
        lines += [f"  {c}" for c in dec.commands]
    elif dec.commands:
        lines.append(f"best guess, not shown better: {dec.leader} only leads; to apply it "
                     "anyway (a real device; fslab measured on loop images):")
        lines += [f"  {c}" for c in dec.commands]
    lines += [f"not raced: {lo}" for lo in dec.left_out]
    return lines + list(dec.stage_notes)


def _leaves_out_1(ci: tuple[float | None, float | None]) -> bool:
    lo, hi = ci
    return lo is not None and hi is not None and (hi < 1 or lo > 1)


def stage_lines(s: StageSummary) -> list[str]:
    """One stage of a decide: what raced, what won, why."""
    won = (f"winner {s.leader}" if s.verdict is Verdict.WINNER else
           f"undecided, too noisy to decide delta (leader {s.leader}, a best guess)"
           if s.verdict is Verdict.UNDECIDED else
           f"leader {s.leader}, none of the others delta better (retired, not shown worse)"
           if s.stopped is StopReason.LEADER_WITHIN_DELTA else
           f"tie of {', '.join(s.ties)}, leader {s.leader} ({s.stopped.sentence})" if s.leader
           else f"no decision ({s.stopped.sentence})")
    out = [f"Stage {s.stage}: {s.raced} ({len(s.candidates)} candidates, rounds "
           f"{s.first_round}-{s.first_round + s.rounds - 1}, seed {s.seed}): {won}"
           + (f", P(best) {chance(s.p_best[s.leader])}" if s.leader is not None
              and s.leader in s.p_best else "")]
    if s.why:
        out.append(f"  why: {s.why}")
    if s.eliminated:
        out.append(f"  eliminated: {len(s.eliminated)} ("
                   + "; ".join(s.eliminated) + ")")
    if s.retired:
        out.append(f"  retired (not delta better than the leader): {len(s.retired)} ("
                   + "; ".join(s.retired) + ")")
    return out
