"""A decide's stages, one run: what the next stage races, built from the last one's store.

Stage 1 races what the flags named. From the catalogue, two more kinds follow
(docs/decide.md): after the filesystems at their defaults ("screen"), the winner's own
catalogue one option at a time ("options"); after the options one at a time, the ones
that helped combined ("combine": fslab/decide/combine.py) against the stage's leader and
the defaults. Each later stage runs fresh rounds after the earlier ones' (its stored
rounds first+1, ...), with its own seed, and its plan is kept in the run's environment
(decide.stages), so --resume replays every stage from the store alone.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable

from fslab import plan as plans
from fslab.errors import FslabError
from fslab.decide.candidates import STORED, Candidate, from_catalogue
from fslab.decide.combine import Combination, combine
from fslab.decide.policy import replay
from fslab.decide.race import StopReason
from fslab.decide.result import Decision, StageSummary, Verdict
from fslab.store import Store
from fslab.store.environment import RunEnvironment

SCREEN, OPTIONS, COMBINE, GIVEN = "screen", "options", "combine", "given"
WHAT = {SCREEN: "the filesystems at their defaults", OPTIONS: "each catalogue option varied alone",
        COMBINE: "the options that helped, combined, against the leader and the defaults",
        GIVEN: "the candidates named"}


@dataclass
class Stage:
    kind: str
    plan: plans.Plan
    first: int            # its rounds are the stored rounds first+1, first+2, ...
    probed: dict


def first_kind(plan: plans.Plan) -> str:
    """Stage 1's kind, from what its candidates are."""
    info = plan.race.candidates
    if not info or any(v.get("origin") != "catalogue" for v in info.values()):
        return GIVEN
    if all(v.get("changed") == "defaults" for v in info.values()):
        return SCREEN
    return OPTIONS


def stage_plan(base: plans.Plan, number: int, first: int, cands: list[Candidate]) -> plans.Plan:
    """Stage `number`'s plan: `base`'s workload and race rules, these candidates, a new seed."""
    size = next((f.image_size for f in base.filesystem if f.image_size), None)
    d = base.race
    info = {c.label: {k: v for k, v in c.as_dict().items()
                      if k in STORED} for c in cands}
    out = base.model_copy(update={
        "filesystem": [c.spec.model_copy(update={"image_size": size}) if size else c.spec
                       for c in cands],
        "run": base.run.model_copy(update={"iterations": first,
                                           "seed": (base.run.seed or 42) + number - 1}),
        "decide": d.model_copy(update={"candidates": info, "left_out": []})})
    return out.model_copy(update={"source_text": plans.to_toml(out)})


def to_candidate(plan: plans.Plan, label: str) -> Candidate:
    spec = next(f for f in plan.filesystem if f.label == label)
    i = plan.race.candidates.get(label, {})
    return Candidate(spec, i.get("safety", "safe"), i.get("trades", ""), i.get("changed", ""),
                     i.get("effect", ""), i.get("origin", ""), i.get("unknown", ""))


def combinations(store: Store, run_id: str, stage: Stage, min_rounds: int) -> list[Combination]:
    """Per filesystem of a one-at-a-time stage, what combines (fslab/decide/combine.py)."""
    race, _ = replay(store, run_id, stage.plan, min_rounds, first=stage.first)
    info = {lv: dict(v, fs=next(f.name for f in stage.plan.filesystem if f.label == lv))
            for lv, v in stage.plan.race.candidates.items()}
    out = []
    for fs in dict.fromkeys(f.name for f in stage.plan.filesystem):
        base = next((lv for lv, v in info.items() if v["fs"] == fs and v.get("changed") == "defaults"), None)
        if base is None or not race.values.get(base):
            continue
        ratios, intervals = {}, {}
        for lv, v in info.items():
            if v["fs"] != fs or lv == base or not race.values.get(lv):
                continue
            if len(race.common_rounds([base, lv])) >= 2:
                t = race.pair(base, lv)
                ratios[lv] = float(t.ratio)
                intervals[lv] = (float(t.ratio_ci_lo), float(t.ratio_ci_hi))
        ratios = {k: r for k, r in ratios.items() if math.isfinite(r)}
        out.append(combine(fs, ratios, info, race.better, set(race.eliminated), intervals))
    return out


def next_candidates(stage: Stage, dec: Decision, store: Store, run_id: str, min_rounds: int,
                    max_candidates: int, refused: Callable[[Candidate], str | None] = lambda c: None
                    ) -> tuple[str | None, list[Candidate], list[str]]:
    """(the next stage's kind, its candidates before the probe, lines saying why) or
    (None, [], the one line saying why there is no next stage). `refused(candidate)`: why
    mkfs or mount refuse a combination (None: they take it); a refused one loses the
    weakest option the refusal names and is tried again while two are left."""
    if stage.kind == SCREEN:
        lead = dec.leader
        if lead is None:
            return None, [], ["no next stage: no filesystem led the screen"]
        fs = next(f.name for f in stage.plan.filesystem if f.label == lead)
        how = ("the winner" if dec.verdict is Verdict.WINNER else
               "the leader (its choice: the others shown not delta better)" if
               dec.stopped is StopReason.LEADER_WITHIN_DELTA else
               "the leader of a tie shown within delta (any of them would do)" if
               dec.equivalent else
               "the leader, a best guess (not separated from the others)")
        try:
            cs = from_catalogue([fs], set(stage.plan.race.allow), None, max_candidates)
        except FslabError:     # too many values: the user narrows them
            return None, [], [f"no next stage: {fs} leads, and its catalogue one option at a time "
                              f"is more than --max-candidates {max_candidates}: fslab decide --fs "
                              f"{fs} --options KEY,... races some of them (fslab options {fs} "
                              "lists the keys), or raise --max-candidates"]
        trades = [lo.split(":")[0].removeprefix(f"{fs} ") for lo in cs.left_out]
        return OPTIONS, cs.candidates, [f"{fs} is {how}: its catalogue, one option at a time"] + (
            [f"not raced, trades: {', '.join(trades)} (--allow trade races them; fslab options "
             f"{fs} says what each trades)"] if trades else [])
    if stage.kind != OPTIONS:
        return None, [], []
    combos = combinations(store, run_id, stage, min_rounds)
    lines: list[str] = []
    made: list[tuple[str, Candidate]] = []     # (filesystem, its combination)
    for c in combos:
        line = c.summary()
        while c.candidate is not None and (why := refused(c.candidate)):
            line += f"; {' + '.join(h.value for h in c.helped)} refused: {why}"
            c = c.weaker(why)
            if c.candidate is not None:
                line += f"; trying {c.candidate.changed}"
        if c.candidate is not None:
            made.append((c.fs, c.candidate))
        elif line != c.summary():
            line += ": nothing left to combine"
        lines.append(line)
    if not made:
        return None, [], [f"no combination stage: {'; '.join(lines) or 'no option was measured'}"]
    cands: list[Candidate] = []
    lead = dec.leader
    if lead:
        cands.append(to_candidate(stage.plan, lead))
    for fs, combined in made:
        base = next(lv for lv, v in stage.plan.race.candidates.items()
                    if v.get("changed") == "defaults" and lv.split(":")[0] == fs)
        cands += [to_candidate(stage.plan, base), combined]
    seen, unique = set(), []
    for cand in cands:
        if cand.label not in seen:
            seen.add(cand.label)
            unique.append(cand)
    return COMBINE, unique, lines


def stage_summary(n: int, stage: Stage, dec: Decision, why: str) -> StageSummary:
    """Stage `n` as the decision lists it: what raced, how it ended, why it ran."""
    return StageSummary(
        stage=n, kind=stage.kind, raced=WHAT[stage.kind], why=why,
        candidates=tuple(f.label for f in stage.plan.filesystem), first_round=stage.first + 1,
        rounds=dec.rounds, seed=stage.plan.run.seed, verdict=dec.verdict, leader=dec.leader,
        ties=dec.ties, stopped=dec.stopped, units_run=dec.units_run,
        eliminated=tuple(r.label for r in dec.candidates if r.eliminated_round is not None),
        retired=tuple(r.label for r in dec.candidates if r.retired_round is not None),
        p_best={r.label: r.p_best for r in dec.candidates if r.p_best is not None
                and r.eliminated_round is None})


def staged(decisions: list[Decision], stages: list[Stage], notes: list[str]) -> Decision:
    """The decision of a decide: its last stage's, with every stage's summary (`notes[i]`:
    why stage i + 2 ran; the notes after the last stage's say why no next one did) and,
    over several stages, the units and left-out candidates of all of them."""
    out = dataclasses.replace(
        decisions[-1], stages=tuple(stage_summary(i + 1, s, d, notes[i - 1] if i else "")
                                    for i, (s, d) in enumerate(zip(stages, decisions))),
        stage_notes=tuple(notes[len(stages) - 1:]))
    if len(stages) > 1:     # units and rounds of the whole decide, not only its last stage
        out = dataclasses.replace(
            out, units_run=sum(d.units_run for d in decisions),
            units_full_factorial=sum(d.units_full_factorial for d in decisions),
            left_out=decisions[0].left_out + out.left_out)
    return out


def budget_stop(store: Store, run_id: str, plan: plans.Plan, last_first: int) -> str | None:
    """Why no next stage starts for the --budget: spent, or the last stage stopped because
    its next round would have overrun it (a new stage would run its first rounds past it)."""
    budget = plan.race.budget_seconds
    if not budget:
        return None
    if RunEnvironment.of_run(store.run(run_id)).decide.budget_stop_after(last_first) is not None:
        return "the last stage stopped where its next round would have overrun the --budget"
    spent = sum(u["finished"] - u["started"] for u in store.units(run_id)
                if u.get("started") and u.get("finished"))
    return "the --budget is spent" if spent >= budget else None
