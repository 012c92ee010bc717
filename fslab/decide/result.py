"""A decide's result as types: the decision, each candidate's line and each stage's summary,
with their JSON (stored in the run's environment, printed by `fslab decide --json`, in
`fslab report --json`).

Versions of the stored JSON (pyperf's way: one reader per version, the writer of the
version a decision was read at, so a report of an old store prints it as it was):
- 1 (no "schema_version" key; fslab before the types): "winner" holds the leader whatever
  the verdict; older ones lack keys added since ("decided", "cannot_decide",
  "alpha_per_look", "max_rounds", "stages", "stage_notes", and per candidate "unknown",
  "retired_round", "throttle", "write_amplification"): read with the renderers' answers
  for a missing key.
- 2: "winner" only for a winner, the leader in "leader" (as `fslab decide --json` always
  printed it), "stop_reason" the StopReason's name beside the "stopped" sentence; since
  every fslab JSON is versioned alike (fslab/schema.py) it leads with "fslab" and "schema",
  and keeps "schema_version", which the fslab before that reads to refuse a newer decision.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping

from fslab import schema
from fslab.decide.race import StopReason

SCHEMA_VERSION = schema.SCHEMAS["decision"]


class Verdict(Enum):
    WINNER = "winner"
    TIE = "tie"
    NO_CANDIDATE = "no candidate left"
    UNDECIDED = "undecided"             # too noisy to decide delta (RacePolicy's first look)
    UNFINISHED = "unfinished"           # the run was interrupted before the race stopped

    @classmethod
    def of_stop(cls, stop: StopReason) -> "Verdict":
        return _VERDICTS[stop]


_VERDICTS = {StopReason.WINNER: Verdict.WINNER, StopReason.TIE: Verdict.TIE,
             StopReason.LEADER_WITHIN_DELTA: Verdict.TIE, StopReason.BUDGET: Verdict.TIE,
             StopReason.NONE_LEFT: Verdict.NO_CANDIDATE, StopReason.NOISE: Verdict.UNDECIDED,
             StopReason.INTERRUPTED: Verdict.UNFINISHED}


def _winner(verdict: Verdict, leader: str | None) -> str | None:
    return leader if verdict is Verdict.WINNER else None


@dataclass(frozen=True)
class CandidateResult:
    """One candidate's line: its ratio to the leader (95% CI), P(best), expected loss, and
    why it stopped (or leads)."""
    label: str
    fs: str
    options: str
    changed: str
    safety: str                         # "safe" | "trade"
    trades: str
    effect: str
    unknown: str
    rounds: int
    p_best: float | None
    expected_loss: float | None
    ratio: float | None
    ratio_ci: tuple[float | None, float | None]
    eliminated_round: int | None
    retired_round: int | None
    why: str
    throttle: float | None              # a benchmark clone slowed by this fraction (bench/decide)
    write_amplification: float | None   # device bytes written per byte fio wrote

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "fs": self.fs, "options": self.options,
                "changed": self.changed, "safety": self.safety, "trades": self.trades,
                "effect": self.effect, "unknown": self.unknown, "rounds": self.rounds,
                "p_best": self.p_best, "expected_loss": self.expected_loss, "ratio": self.ratio,
                "ratio_ci": list(self.ratio_ci), "eliminated_round": self.eliminated_round,
                "retired_round": self.retired_round, "why": self.why, "throttle": self.throttle,
                "write_amplification": self.write_amplification}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "CandidateResult":
        lo, hi = d.get("ratio_ci") or (None, None)
        return cls(label=d["label"], fs=d.get("fs", ""), options=d.get("options", ""),
                   changed=d.get("changed", ""), safety=d.get("safety", "safe"),
                   trades=d.get("trades", ""), effect=d.get("effect", ""),
                   unknown=d.get("unknown", ""), rounds=d.get("rounds", 0),
                   p_best=d.get("p_best"), expected_loss=d.get("expected_loss"),
                   ratio=d.get("ratio"), ratio_ci=(lo, hi),
                   eliminated_round=d.get("eliminated_round"),
                   retired_round=d.get("retired_round"), why=d.get("why", ""),
                   throttle=d.get("throttle"), write_amplification=d.get("write_amplification"))


@dataclass(frozen=True)
class StageSummary:
    """One stage of a decide: what raced, how it ended."""
    stage: int
    kind: str
    raced: str
    why: str
    candidates: tuple[str, ...]
    first_round: int
    rounds: int
    seed: int | None
    verdict: Verdict
    leader: str | None
    ties: tuple[str, ...]
    stopped: StopReason
    units_run: int
    eliminated: tuple[str, ...]
    retired: tuple[str, ...]
    p_best: Mapping[str, float]         # the finalists'

    @property
    def winner(self) -> str | None:
        return _winner(self.verdict, self.leader)

    def to_json(self, version: int = SCHEMA_VERSION) -> dict[str, Any]:
        out: dict[str, Any] = {
            "stage": self.stage, "kind": self.kind, "raced": self.raced, "why": self.why,
            "candidates": list(self.candidates), "first_round": self.first_round,
            "rounds": self.rounds, "seed": self.seed, "verdict": self.verdict.value,
            "winner": self.leader if version == 1 else self.winner, "ties": list(self.ties),
            "stopped": self.stopped.sentence, "units_run": self.units_run,
            "eliminated": list(self.eliminated), "retired": list(self.retired),
            "p_best": dict(self.p_best)}
        if version >= 2:
            out |= {"leader": self.leader, "stop_reason": self.stopped.value}
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any], version: int) -> "StageSummary":
        return cls(stage=d["stage"], kind=d.get("kind", ""), raced=d.get("raced", ""),
                   why=d.get("why", ""), candidates=tuple(d.get("candidates") or ()),
                   first_round=d["first_round"], rounds=d["rounds"], seed=d.get("seed"),
                   verdict=Verdict(d["verdict"]), leader=_leader(d, version),
                   ties=tuple(d.get("ties") or ()), stopped=_stop(d),
                   units_run=d.get("units_run", 0),
                   eliminated=tuple(d.get("eliminated") or ()),
                   retired=tuple(d.get("retired") or ()), p_best=dict(d.get("p_best") or {}))


def _leader(d: Mapping[str, Any], version: int) -> str | None:
    return d.get("winner") if version == 1 else d.get("leader")


def _stop(d: Mapping[str, Any]) -> StopReason:
    if "stop_reason" in d:
        return StopReason(d["stop_reason"])
    return StopReason.of_sentence(d["stopped"])


@dataclass(frozen=True)
class Decision:
    """The decision a person can act on (fslab/decide/decision.py makes it): the verdict,
    the leader (the winner only when the verdict is one), each candidate's line, the
    smallest difference the run could find, units run against a full factorial, and what
    to type."""
    run: str
    verdict: Verdict
    leader: str | None
    ties: tuple[str, ...]
    equivalent: bool                    # the tie was shown within delta
    stopped: StopReason
    finalists: tuple[str, ...]
    metric: str                         # the measure raced on, in words
    better: str                         # "higher" | "lower"
    metrics: Mapping[str, str]          # each workload's metrics
    delta: float
    max_rounds: int
    alpha: float
    alpha_per_look: float | None        # the level of the last look
    candidates: tuple[CandidateResult, ...]
    mde: float | None                   # the smallest difference found with 80% power
    rounds: int
    units_run: int
    units_full_factorial: int
    left_out: tuple[str, ...]
    commands: tuple[str, ...]
    decided: bool                       # the race showed its answer (else a best guess)
    cannot_decide: str
    traded: tuple[str, ...]
    stages: tuple[StageSummary, ...] = ()
    stage_notes: tuple[str, ...] = ()
    # the version it was stored at (written back so by `fslab report --json`)
    stored_version: int = field(default=SCHEMA_VERSION, compare=False)

    @property
    def winner(self) -> str | None:
        return _winner(self.verdict, self.leader)

    def to_json(self, version: int = SCHEMA_VERSION) -> dict[str, Any]:
        out: dict[str, Any] = {
            "run": self.run, "verdict": self.verdict.value,
            "winner": self.leader if version == 1 else self.winner, "ties": list(self.ties),
            "equivalent": self.equivalent, "stopped": self.stopped.sentence,
            "finalists": list(self.finalists), "metric": self.metric, "better": self.better,
            "metrics": dict(self.metrics), "delta": self.delta, "max_rounds": self.max_rounds,
            "alpha": self.alpha, "alpha_per_look": self.alpha_per_look,
            "candidates": [c.to_json() for c in self.candidates], "mde": self.mde,
            "rounds": self.rounds, "units_run": self.units_run,
            "units_full_factorial": self.units_full_factorial, "left_out": list(self.left_out),
            "commands": list(self.commands), "decided": self.decided,
            "cannot_decide": self.cannot_decide, "traded": list(self.traded),
            "stages": [s.to_json(version) for s in self.stages],
            "stage_notes": list(self.stage_notes)}
        if version == 1:
            return out                  # as stored then: no version keys
        out |= {"leader": self.leader, "stop_reason": self.stopped.value,
                "schema_version": version}
        return schema.stamp("decision", out, version)

    @classmethod
    def from_json(cls, d: Mapping[str, Any], source: str = "a decision") -> "Decision":
        """Any stored version; one a newer fslab wrote is refused in one line."""
        version = schema.check("decision", d, source)
        verdict, stopped = Verdict(d["verdict"]), _stop(d)
        return cls(run=d["run"], verdict=verdict, leader=_leader(d, version),
                   ties=tuple(d.get("ties") or ()), equivalent=bool(d.get("equivalent")),
                   stopped=stopped, finalists=tuple(d.get("finalists") or ()),
                   metric=d.get("metric", ""), better=d.get("better", "higher"),
                   metrics=dict(d.get("metrics") or {}), delta=d["delta"],
                   # stored before the key: its rounds were all it had
                   max_rounds=d.get("max_rounds", d["rounds"]), alpha=d.get("alpha", 0.05),
                   alpha_per_look=d.get("alpha_per_look"),
                   candidates=tuple(CandidateResult.from_json(c) for c in d["candidates"]),
                   mde=d.get("mde"), rounds=d["rounds"], units_run=d.get("units_run", 0),
                   units_full_factorial=d.get("units_full_factorial", 0),
                   left_out=tuple(d.get("left_out") or ()), commands=tuple(d.get("commands") or ()),
                   decided=bool(d["decided"]) if "decided" in d else _decided_before_the_key(
                       verdict, stopped),
                   cannot_decide=d.get("cannot_decide") or "", traded=tuple(d.get("traded") or ()),
                   stages=tuple(StageSummary.from_json(s, version) for s in d.get("stages") or ()),
                   stage_notes=tuple(d.get("stage_notes") or ()), stored_version=version)


def _decided_before_the_key(verdict: Verdict, stopped: StopReason) -> bool:
    """A decision stored before "decided": shown unless a tie the rounds could not separate."""
    return verdict is Verdict.WINNER or (verdict is Verdict.TIE and stopped in (
        StopReason.TIE, StopReason.LEADER_WITHIN_DELTA))


def stored_decisions(runs: list[dict]) -> list[Decision]:
    """The decisions `fslab decide` stored with its runs (the runs as the store returns them)."""
    from fslab.store.environment import RunEnvironment
    return [Decision.from_json(d, f"run {r.get('run_id')}'s decision") for r in runs
            if (d := RunEnvironment.of_run(r).decide.decision)]
