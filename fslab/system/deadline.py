"""A deadline for a measured process (fio): never wait forever for a unit.

The deadline comes from what the unit asked for: `factor` x (runtime + ramp) plus the
time to write its files at a pessimistic rate, never below `floor`; the plan's
`[run] unit_timeout` overrides it. When it passes, what is stuck is said (each process
of fio's family: state and the kernel call it waits in, from /proc), a FUSE filesystem
under it has its connection aborted (fusectl), fio and its job processes are killed
(they each call setsid(), so fio's process group alone misses them), and the unit fails
with "hung: no result after N s (fio in fuse_fsync_common (state S))"; the suite then
asks the driver to recover (`Driver.recover_after_hang`: zfs-fuse replaces a daemon
that no longer answers) and the run goes on with the next unit.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from fslab.system.fuse import abort_fuse
from fslab.system.proc import Proc, kill_family, process_family

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
    unstick and kill it with its descendants and process group, and raise Hung with
    what they were waiting in."""
    end = time.monotonic() + deadline_s
    pause = 0.05
    while True:
        done, status, ru = os.wait4(pid, os.WNOHANG)
        if done:
            return status, ru
        left = end - time.monotonic()
        if left <= 0:
            break
        time.sleep(min(pause, left))     # given up on at the deadline, not up to 0.5 s after
        pause = min(pause * 2, 0.5)
    family = process_family(pid)   # before any kill: orphans lose their parent link
    stuck = describe(family)
    aborted = abort_fuse(directory) if directory else False
    kill_family(pid)
    for _ in range(100):                 # 10 s for the kill to land (an aborted FUSE
        done, status, ru = os.wait4(pid, os.WNOHANG)   # request returns at once)
        if done:
            break
        time.sleep(0.1)
    where = f" ({stuck})" if stuck else ""
    raise Hung(f"hung: no result after {deadline_s:.3g} s{where}"
               + ("; its FUSE connection was aborted" if aborted else ""))


def describe(family: list[Proc]) -> str:
    """'fio in fuse_fsync_common (state S)': where each process waits in the kernel (the
    call it made, from its kernel stack when readable, else its wait channel), blocked
    ones first, at most three different."""
    seen = []
    for p in family:
        try:
            wchan = Path(f"/proc/{p.pid}/wchan").read_text().strip()
        except OSError:
            continue
        where = "running" if wchan in ("", "0") else _kernel_call(p.pid, wchan) or wchan
        idle = any(w in where for w in _OWN_WAITS)
        seen.append((p.state == "R", idle, p.state != "D", f"{p.name} in {where} (state {p.state})"))
    texts = []
    for *_, text in sorted(seen):
        if text not in texts:
            texts.append(text)
    return ", ".join(texts[:3])


# waiting for its own timer or children (fio's main process), not for a filesystem
_OWN_WAITS = ("sleep", "nsleep", "poll", "select", "wait4", "do_wait", "futex", "pause")
_GENERIC_FRAMES = ("request_wait_answer", "fuse_simple_request", "fuse_request_send",
                   "schedule", "wait_", "do_syscall", "entry_SYSCALL", "x64_sys")


def _kernel_call(pid: int, wchan: str) -> str:
    """The first frame of the kernel stack that says what was asked (fuse_fsync_common,
    fuse_send_open), past the generic waiting frames; '' when the stack is not readable."""
    try:
        frames = Path(f"/proc/{pid}/stack").read_text().splitlines()
    except OSError:
        return ""
    for frame in frames:
        name = frame.split("] ", 1)[-1].split("+", 1)[0].lstrip("_")
        if name and name != wchan and not any(g in name for g in _GENERIC_FRAMES):
            return name
    return ""

