"""Block-device counters: what reached the device, from /sys/class/block/<dev>/stat.

The kernel counts every request a block device completed (sectors are always
512 bytes there, whatever the device's block size). Read before and after a
measurement, the difference says how many bytes the filesystem really moved to
and from the device: reads the page cache served never show up, and journal,
metadata and copy-on-write writes do. For a partition the partition's own line
is read (the kernel keeps one per partition); for a loop image the loop device,
which sees exactly what the filesystem above it sent; for a zpool every vdev.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from fslab.system.mounts import mount_holding

SECTOR = 512


@dataclass(frozen=True)
class DevCounters:
    read_bytes: int = 0
    write_bytes: int = 0
    ios: int = 0             # completed reads + writes
    busy_ms: int = 0         # io_ticks: time the device had I/O in flight

    def __add__(self, o: "DevCounters") -> "DevCounters":
        return DevCounters(self.read_bytes + o.read_bytes, self.write_bytes + o.write_bytes,
                           self.ios + o.ios, self.busy_ms + o.busy_ms)

    def __sub__(self, o: "DevCounters") -> "DevCounters":
        return DevCounters(self.read_bytes - o.read_bytes, self.write_bytes - o.write_bytes,
                           self.ios - o.ios, self.busy_ms - o.busy_ms)


def parse_stat(line: str) -> DevCounters:
    """One /sys/block/<dev>/stat line (Documentation/block/stat.rst field order)."""
    f = [int(x) for x in line.split()]
    # 0 read I/Os, 2 read sectors, 4 write I/Os, 6 write sectors, 9 io_ticks (ms)
    return DevCounters(read_bytes=f[2] * SECTOR, write_bytes=f[6] * SECTOR, ios=f[0] + f[4],
                       busy_ms=f[9])


def stat_path(device: str) -> Path | None:
    """The stat file of a block device node (/dev/loop3, /dev/sda1, a /dev/disk/by-* link)."""
    name = os.path.basename(os.path.realpath(device))
    p = Path("/sys/class/block") / name / "stat"
    return p if p.exists() else None


def block_devices(devices: list[str]) -> list[str]:
    """The devices of this list that have kernel counters (image files and such drop out)."""
    return [d for d in devices if stat_path(d) is not None]


def read(devices: list[str]) -> DevCounters:
    """The counters of these devices, summed."""
    total = DevCounters()
    for d in devices:
        p = stat_path(d)
        if p is not None:
            total = total + parse_stat(p.read_text())
    return total


def source_device_of(directory: str) -> str | None:
    """The block device a mounted directory lives on (for --mountpoint runs), if any."""
    m = mount_holding(directory)
    best = m.source if m else None
    return best if best and best.startswith("/dev/") and stat_path(best) else None
