"""Timing a step like GNU time: elapsed, CPU %, page faults, plus system-wide CPU.

The numbers come from getrusage(RUSAGE_CHILDREN) before and after the step: the
kernel adds a child's rusage (and that of its own waited-for children) when it
is reaped, which is what GNU time reads with wait4. Taking the difference
covers a single command (`cp -a`) and a driver step that runs several
(`zpool create` then `zfs set`) alike. Work done outside our children (kernel
threads, the zfs-fuse daemon) only shows in the system-wide CPU from /proc/stat.

Steps must run one at a time: concurrent children would mix their rusage.
"""
from __future__ import annotations

import os
import resource
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from fslab.system.cpu import busy_percent, sample
from fslab.errors import StepFailed
from fslab.metrics import Catalogue
from fslab.metrics.declared import STEP_USAGE
from fslab.records import Measurement

# a timed step's usage, as the catalogue declares it for every suite that records it
USAGE = Catalogue(STEP_USAGE)


@dataclass
class StepUsage:
    elapsed_s: float = 0.0
    user_s: float = 0.0
    sys_s: float = 0.0
    major_faults: int = 0
    minor_faults: int = 0
    cpu_system_wide: float = 0.0   # % of all CPUs busy during the step

    @property
    def cpu_percent(self) -> float:
        """GNU time's %CPU: (user + system) / elapsed; can exceed 100 with threads."""
        return 100.0 * (self.user_s + self.sys_s) / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def measurements(self, case: str | None = None, artifact: str | None = None) -> list[Measurement]:
        def m(metric, value):
            return USAGE.measure(metric, value, artifact, case=case)
        # CPU % is described, not ranked (fslab/metrics/declared.py STEP_USAGE)
        return [m("elapsed", self.elapsed_s),
                m("cpu_percent", self.cpu_percent),
                m("major_faults", self.major_faults),
                m("minor_faults", self.minor_faults),
                m("cpu_busy_system_wide", self.cpu_system_wide)]


@contextmanager
def step_usage() -> Iterator[StepUsage]:
    """`with step_usage() as u: ...` fills `u` when the block ends (also on error)."""
    u = StepUsage()
    r0, c0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), sample(), time.perf_counter()
    try:
        yield u
    finally:
        t1, c1, r1 = time.perf_counter(), sample(), resource.getrusage(resource.RUSAGE_CHILDREN)
        u.elapsed_s = t1 - t0
        u.user_s = r1.ru_utime - r0.ru_utime
        u.sys_s = r1.ru_stime - r0.ru_stime
        u.major_faults = r1.ru_majflt - r0.ru_majflt
        u.minor_faults = r1.ru_minflt - r0.ru_minflt
        u.cpu_system_wide = busy_percent(c0, c1)


def run_logged(argv: list[str], log: Path, stdout: Path | None = None,
               timeout: float | None = 3600) -> None:
    """Run one command; its stderr (and stdout unless redirected) go to `log`.

    Raises StepFailed with the log's tail when the command fails.
    """
    with open(log, "ab") as err, open(stdout or log, "ab") as out:
        try:
            # C locale: the same output (ls sort order, messages) on every host
            p = subprocess.run(argv, stdout=out, stderr=err, timeout=timeout,
                               env={**os.environ, "LC_ALL": "C"})
        except subprocess.TimeoutExpired:
            raise StepFailed(f"timed out after {timeout}s: {' '.join(argv)}") from None
    if p.returncode != 0:
        tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:])
        raise StepFailed(f"{' '.join(argv)} exited {p.returncode}: {tail}")


def run_timed(argv: list[str], log: Path, stdout: Path | None = None,
              timeout: float | None = 3600) -> StepUsage:
    """run_logged() as a measured step."""
    with step_usage() as u:
        run_logged(argv, log, stdout, timeout)
    return u
