"""What a decide is asked: `fslab decide`'s flags as one typed value (fslab/run/decide.py
runs it), with the defaults stated once (the CLI shows these)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from fslab.decide.candidates import MAX_CANDIDATES
from fslab.errors import FslabError

DEFAULT_DELTA = 0.03
DEFAULT_MAX_ROUNDS = 10
DEFAULT_MAX_STAGES = 3
DEFAULT_MAX_CANDIDATES = MAX_CANDIDATES


@dataclass(frozen=True)
class DecideRequest:
    results: Path                       # the results directory (its store)
    plan_file: Path | None = None       # its suites are the workload
    fs: str | None = None               # "ext4,xfs" or "NAME:VARIANT,..."
    candidates: Path | None = None      # a TOML of [[candidate]] tables
    options: str | None = None          # only these catalogue keys
    allow: str = "safe"                 # "safe" | "trade"
    job: tuple[Path, ...] = ()
    replay: tuple[Path, ...] = ()
    suite: str | None = None
    metric: str | None = None
    delta: float = DEFAULT_DELTA
    max_rounds: int = DEFAULT_MAX_ROUNDS
    budget: str | None = None           # "20m", "1h"
    max_candidates: int = DEFAULT_MAX_CANDIDATES
    profile: str | None = None
    fio: tuple[str, ...] = ()
    image_size: str | None = None
    seed: int | None = None
    resume: str | None = None           # a run id: continue that decide
    workdir: Path | None = None
    stages: int = DEFAULT_MAX_STAGES
    keep_going: bool = False

    @property
    def budget_seconds(self) -> float | None:
        return seconds(self.budget) if self.budget else None


def seconds(text: str) -> float:
    """A --budget as seconds: 90s, 20m, 2h (a bare number: seconds)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if not m:
        raise FslabError(f"--budget {text!r}: e.g. 90s, 20m or 2h")
    return float(m[1]) * {"": 1, "s": 1, "m": 60, "h": 3600}[m[2]]
