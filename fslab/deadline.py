"""A deadline for a measured process (fio): never wait forever for a unit.

The deadline comes from what the unit asked for: `factor` x (runtime + ramp) plus the
time to write its files at a pessimistic rate, never below `floor`; the plan's
`[run] unit_timeout` overrides it. When it passes, what is stuck is said (each process
of fio's group: state and kernel wait channel from /proc), a FUSE filesystem under it
has its connection aborted (fusectl), fio's process group is killed, and the unit fails
with "hung: no result after N s (fio in fuse_fsync)"; the run goes on with the next unit.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

FLOOR_S = 120.0           # even a 1 s job gets two minutes (slow loop devices, CI under load)
FACTOR = 4.0              # x what the job asked for
SLOW_WRITE_B_S = 10 * 2**20   # laying files out at 10 MiB/s: a pessimistic disk


class Hung(Exception):
    """The process did not finish before its deadline; the message says where it waits."""


def deadline_for(runtime_s: float, ramp_s: float, bytes_to_write: float,
                 override: float | None = None) -> float:
    if override:
        return float(override)
    return max(FLOOR_S, FACTOR * (runtime_s + ramp_s) + bytes_to_write / SLOW_WRITE_B_S)


def wait(pid: int, deadline_s: float, directory: str | None = None):
    """os.wait4 the child, polling, until `deadline_s`: (status, rusage); on expiry,
    unstick and kill its process group and raise Hung with what it was waiting in."""
    end = time.monotonic() + deadline_s
    pause = 0.05
    while True:
        done, status, ru = os.wait4(pid, os.WNOHANG)
        if done:
            return status, ru
        if time.monotonic() >= end:
            break
        time.sleep(pause)
        pause = min(pause * 2, 0.5)
    stuck = describe_group(pid)
    aborted = abort_fuse(directory) if directory else False
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for _ in range(100):                 # 10 s for the kill to land (an aborted FUSE
        done, status, ru = os.wait4(pid, os.WNOHANG)   # request returns at once)
        if done:
            break
        time.sleep(0.1)
    where = f" ({stuck})" if stuck else ""
    raise Hung(f"hung: no result after {deadline_s:.3g} s{where}"
               + ("; its FUSE connection was aborted" if aborted else ""))


def describe_group(pid: int) -> str:
    """'fio in fuse_fsync' for the processes of the group led by pid (blocked ones first)."""
    seen = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            name = text[text.index("(") + 1:text.rindex(")")]
            fields = text[text.rindex(")") + 2:].split()
            state, pgrp = fields[0], int(fields[2])
            if pgrp != pid:
                continue
            wchan = (stat.parent / "wchan").read_text().strip() or "running"
        except (OSError, ValueError):
            continue
        seen.append((state != "D", f"{name} in {wchan if wchan != '0' else 'running'} (state {state})"))
    return ", ".join(sorted(set(text for _, text in sorted(seen)))[:3])


def abort_fuse(directory: str) -> bool:
    """Abort the FUSE connection serving `directory`, if it is one (a hung daemon then
    answers every waiting request with an error instead of never)."""
    try:
        dev = os.stat(directory).st_dev
    except OSError:
        return False
    conn = Path(f"/sys/fs/fuse/connections/{os.minor(dev)}/abort")
    if os.major(dev) != 0 or not conn.exists():
        return False
    try:
        conn.write_text("1")
        return True
    except OSError:
        return False
