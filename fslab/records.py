"""The one record schema every suite produces and analysis consumes.

A workload returns `Measurement`s (what was measured); the scheduler stamps them
with the unit's identity (run, host, fs, variant, suite, case, params, iteration)
to make `Record`s. Analysis only ever sees Records.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, asdict
from typing import Any, Literal

import orjson

Better = Literal["higher", "lower"] | None

RECORD_COLUMNS = (
    "run_id", "host", "fs", "variant", "suite", "case", "params",
    "iteration", "metric", "value", "unit", "better", "artifact", "ts",
)

# a filesystem made with no options of its own: its records' variant, unnamed in its label
DEFAULT_VARIANT = "default"


def level_label(fs: str, variant: str | None) -> str:
    """A filesystem variant as every output names it: 'ext4', 'zfs:dedup'."""
    return fs if variant in (None, DEFAULT_VARIANT) else f"{fs}:{variant}"


# the host of fio's "All clients" records in a multi-host parallel run: their sum, a
# different quantity from any one host's (shown beside the hosts, never ranked against one)
AGGREGATE_HOST = "all"


def canonical_params(params: dict[str, Any] | None) -> str:
    """JSON with sorted keys, so equal params always compare equal as text."""
    return orjson.dumps(params or {}, option=orjson.OPT_SORT_KEYS).decode()


def params_order(params: str) -> tuple:
    """A sort key for canonical params that puts numbers in their order: an aging run's
    steps 0, 25, 50, 75, 100 (as text, step 100 came before step 25)."""
    try:
        items = orjson.loads(params or "{}")
    except (orjson.JSONDecodeError, TypeError):
        items = None
    if not isinstance(items, dict):
        return (1, str(params))
    return (0, tuple((k, (0, v, "") if isinstance(v, (int, float)) and not isinstance(v, bool)
                      else (1, 0, str(v))) for k, v in items.items()))


@dataclass(slots=True)
class Measurement:
    """One measured value, as a workload reports it.

    `case` and `params` refine the unit's own case/params when one unit yields
    several cases (e.g. the 11 file-server tasks, or one fio job of many).
    """
    metric: str
    value: float
    unit: str
    better: Better = None
    artifact: str | None = None
    case: str | None = None
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Record:
    run_id: str
    host: str
    fs: str
    variant: str
    suite: str
    case: str
    params: str          # canonical JSON
    iteration: int
    metric: str
    value: float
    unit: str
    better: Better
    artifact: str | None
    ts: float

    def as_row(self) -> tuple:
        return tuple(getattr(self, c) for c in RECORD_COLUMNS)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class UnitKey:
    """Identity of one schedulable unit: (fs variant, suite case, iteration) on a host."""
    host: str
    fs: str
    variant: str
    suite: str
    case: str
    params: str          # canonical JSON
    iteration: int

    def label(self) -> str:
        """'ext4/default fio:t2-write size=6.4M numjobs=4 #1': the swept values tell the
        units of one sweep apart (the workload name itself is not repeated)."""
        import orjson
        try:
            params = orjson.loads(self.params) if self.params else {}
        except orjson.JSONDecodeError:
            params = {}
        swept = " ".join(f"{k}={v}" for k, v in params.items()
                         if k != "workload" and v != self.case)
        return (f"{self.fs}/{self.variant} {self.suite}:{self.case}"
                f"{' ' + swept if swept else ''} #{self.iteration}")

    def slug(self) -> str:
        """A directory name for this unit's raw artifacts."""
        import hashlib
        h = hashlib.sha1(self.params.encode()).hexdigest()[:8]
        host = "" if self.host == "localhost" else f"{self.host}/"
        return f"{host}{self.fs}-{self.variant}/{self.suite}-{self.case}-{h}/iter-{self.iteration:03d}"


def stamp(key: UnitKey, run_id: str, m: Measurement, ts: float | None = None) -> Record:
    params = key.params
    if m.params:
        merged = orjson.loads(key.params)
        merged.update(m.params)
        params = canonical_params(merged)
    return Record(
        run_id=run_id, host=key.host, fs=key.fs, variant=key.variant, suite=key.suite,
        case=m.case or key.case, params=params, iteration=key.iteration,
        metric=m.metric, value=float(m.value), unit=m.unit, better=m.better,
        artifact=m.artifact, ts=ts if ts is not None else time.time(),
    )
