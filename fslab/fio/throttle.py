"""A planted slowdown, the benchmark aid behind a candidate's `throttle = "5%"`: its fio
jobs idle that fraction of the time, so bench/decide can check that a race ranks a clone
slowed by a known fraction below its original (docs/decide.md). Never a configuration.

How: a duty cycle in every job, `thinktime_iotime` of I/O then `thinktime` of none, in
periods of PERIOD_US (fio 3.28+; fio lets the I/O in flight finish before it idles). It
is relative and needs no reference run: whatever the filesystem's speed, a time-based
job does the fraction x less I/O in its runtime, a size-based one takes 1/(1 - x) the
time. It slows throughput (IOPS, bandwidth) only: each I/O's latency is what it was, so
a race on a latency sees no slowdown. The slowdown achieved can be more than x (each
idle waits for the queue to drain first; on a virtual machine the I/O after an idle runs
slower for a while) and, in a job of a few periods, less (the first idle comes late):
bench/decide --real-planted measures it (docs/decide.md: about twice x on the 2-core
development VM, 5.2% / 8.6% / 17.4% for 3% / 5% / 10%).
"""
from __future__ import annotations

from typing import Any

from fslab.plan.throttle import percent

PERIOD_US = 100_000      # 100 ms: 10 idles in a 1 s job; a drain of a few ms is a small part
KEYS = ("thinktime", "thinktime_iotime", "thinktime_blocks", "thinktime_spin",
        "thinktime_blocks_type")


def fio_options(x: float) -> dict[str, str]:
    """The job options that idle the fraction `x` of every period."""
    idle = round(x * PERIOD_US)
    return {"thinktime": f"{idle}us", "thinktime_iotime": f"{PERIOD_US - idle}us"}


def conflict(options: dict[str, Any]) -> str | None:
    """The think-time option a job sets itself (the throttle would replace it), else None."""
    return next((k for k in KEYS if k in options), None)


def into_job_text(text: str, x: float) -> str:
    """A job file with the throttle's options at the end of every job section (after
    anything [global] or the job itself set: the last value of an option wins in fio)."""
    extra = [f"{k}={v}" for k, v in fio_options(x).items()]
    out: list[str] = []
    section = None

    def close() -> None:
        if section is not None and section != "global":
            while out and not out[-1].strip():      # before the blank lines between sections
                out.pop()
            out.extend(["# fslab: a planted slowdown (throttle): idle "
                        f"{percent(x)} of every {PERIOD_US // 1000} ms", *extra, ""])

    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            close()
            section = stripped[1:-1].strip()
        out.append(line)
    close()
    return "\n".join(out).rstrip("\n") + "\n"
