"""Settle the machine before a unit: the previous unit's writeback drained, caches dropped.

A unit that starts while the host is still writing back what the last one (or its
teardown: an image deleted, a journal committed) left dirty shares the disk with it;
bench/noise measures how much of a unit's own noise that is (`[run] settle`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from fslab.system.proc import TimedOut, is_root, run

QUIET_KIB = 1024          # Dirty + Writeback below this counts as drained


@dataclass(frozen=True)
class Settled:
    seconds: float        # how long settling took
    dirty_kib: int        # Dirty + Writeback left when it stopped waiting
    dropped: bool         # page cache, dentries and inodes dropped


def dirty_kib() -> int:
    """Dirty + Writeback of /proc/meminfo, in KiB."""
    total = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("Dirty", "Writeback"):
            total += int(rest.split()[0])
    return total


def settle(limit_s: float = 30.0) -> Settled:
    """sync, wait (at most `limit_s`) for Dirty + Writeback to fall below QUIET_KIB, then
    drop the page cache (root only)."""
    t0 = time.monotonic()
    try:
        run(["sync"], timeout=limit_s, check=False)
    except TimedOut:   # a disk that cannot drain in time: the unit runs anyway, said
        pass
    left = dirty_kib()
    while left > QUIET_KIB and time.monotonic() - t0 < limit_s:
        time.sleep(0.05)
        left = dirty_kib()
    dropped = False
    if is_root():
        try:
            Path("/proc/sys/vm/drop_caches").write_text("3\n")
            dropped = True
        except OSError:
            pass
    return Settled(time.monotonic() - t0, left, dropped)
