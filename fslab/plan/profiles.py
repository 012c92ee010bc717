"""Profiles scale a study's sizes and durations; `paper` is the study itself.

Suites read these numbers instead of hard-coding their own scaling, so "smoke"
means the same thing for every suite, and the report can say what was scaled.
"""
from __future__ import annotations

from dataclasses import dataclass
from fslab.errors import FslabError

MiB = 1 << 20
GiB = 1 << 30


@dataclass(frozen=True)
class Profile:
    name: str
    iterations: int          # default repetitions (a plan may override)
    runtime_s: float | None  # fio runtime for a test the study ran 60 s; None = the study's own
    max_file_bytes: int | None   # cap on any one data file; None = the study's own size
    min_image_bytes: int     # smallest loop image (XFS refuses < 300 MiB)
    scale: float             # fraction of the study's file counts / tree sizes
    description: str
    # a unit's loop image and the machine before it (fslab/targets/loop.py,
    # fslab/system/settle.py); bench/noise measured them (docs/statistics.md)
    image: str = "fresh"
    settle: bool = False
    # a round's order (fslab/run/schedule.py): each case's filesystems back to back halved
    # the own-noise variance of bench/noise's twins against every unit shuffled
    order: str = "grouped"
    # how a round measures a fio case that allows it: its candidates' slices taking turns in
    # one fio process ("sliced", fslab/workloads/sliced.py) or one unit each ("units")
    design: str = "sliced"
    # (ramp s, window s, ceiling s): a time-based fio job runs until its window is steady
    # (SNIA PTS's rule, fio's steadystate) or the ceiling; None: the runtime as it is
    steady_state: tuple[int, int, int] | None = None

    @property
    def scaled(self) -> bool:
        return self.name != "paper"

    def file_size(self, paper_bytes: int) -> int:
        return paper_bytes if self.max_file_bytes is None else min(paper_bytes, self.max_file_bytes)

    def runtime(self, paper_seconds: float) -> float:
        return paper_seconds if self.runtime_s is None else min(paper_seconds, self.runtime_s)

    def count(self, paper_count: int, minimum: int = 1) -> int:
        return max(minimum, round(paper_count * self.scale))


PROFILES: dict[str, Profile] = {p.name: p for p in (
    Profile("smoke", 2, 1, 32 * MiB, 320 * MiB, 0.02,
            "CI check: 32 MiB files, 1 s runs, 2 rounds; numbers are not meaningful"),
    # 5 iterations: the fewest with which a difference can be significant after
    # Holm's correction across up to 4 filesystems without ties (exact Mann-Whitney
    # 5+5: smallest p 0.008, x 6 pairs = 0.048); 5 filesystems need 6 rounds
    # 2 s runs: four filesystems x the fio suite's seven workloads x 5 rounds (140 units)
    # fit in about 10 minutes; a 4 KiB job still completes tens of thousands of I/Os
    Profile("quick", 5, 2, 128 * MiB, 1 * GiB, 0.1,
            "default: 128 MiB files, 2 s runs, 5 rounds (about 10 min for 4 filesystems)"),
    Profile("standard", 5, 20, 1 * GiB, 4 * GiB, 0.5,
            "1 GiB files, runs until steady (SNIA's rule over a 10 s window after 5 s; "
            "at most 60 s), 5 rounds", steady_state=(5, 10, 60)),
    Profile("paper", 10, None, None, 8 * GiB, 1.0,
            "the reference study's exact sizes and durations (hours)", design="units"),
)}


def get(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise FslabError(f"unknown profile {name!r}; choose one of {', '.join(PROFILES)}") from None


def parse_size(text: str | int) -> int:
    """'64M', '1G', '4k', '512' -> bytes (binary units, like fio)."""
    if isinstance(text, int):
        return text
    s = str(text).strip().lower().removesuffix("ib").removesuffix("b")
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    if s and s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(s)
