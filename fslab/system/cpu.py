"""System-wide CPU use over an interval, from /proc/stat.

fio's usr/sys only count fio's own threads; work done by kernel threads or by
zfs-fuse's daemon shows up only here.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CpuSample:
    busy: int
    total: int
    iowait: int


def sample() -> CpuSample:
    with open("/proc/stat") as f:
        return parse_stat_line(f.readline())


def parse_stat_line(line: str) -> CpuSample:
    """/proc/stat's aggregate "cpu ..." line (fslab/workloads/sliced.py keeps it per slice)."""
    fields = [int(x) for x in line.split()[1:]]
    # user nice system idle iowait irq softirq steal (guest, guest_nice are inside user/nice)
    idle, iowait = fields[3], fields[4]
    total = sum(fields[:8])
    return CpuSample(busy=total - idle - iowait, total=total, iowait=iowait)


def busy_percent(a: CpuSample, b: CpuSample) -> float:
    """Share of all CPUs' time spent busy between two samples, 0-100."""
    dt = b.total - a.total
    return 100.0 * (b.busy - a.busy) / dt if dt > 0 else 0.0


def iowait_percent(a: CpuSample, b: CpuSample) -> float:
    dt = b.total - a.total
    return 100.0 * (b.iowait - a.iowait) / dt if dt > 0 else 0.0
