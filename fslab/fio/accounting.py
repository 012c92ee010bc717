"""What a measured fio run cost the device and the CPUs, next to what fio says it did.

Around the measured part of a unit (not the layout, not mkfs) we read:
  - every block device under the filesystem (fslab/system/devstat.py): bytes read and
    written, I/Os, busy time;
  - /proc/stat: CPU busy seconds of the whole machine, which include kernel
    threads (writeback, journal, btrfs workers) and any user-space daemon that
    serves the filesystem;
  - /proc/<pid>/stat of that daemon (zfs-fuse), when the driver names one.
fio's own usr/sys CPU counts only fio's threads: for zfs-fuse nearly all the
filesystem's work is in the daemon, so only the measures above may rank CPU.

Derived per unit: device_read_share = device bytes read / fio bytes read (near 1:
the reads came from the device; far below: from memory) and write_amplification
= device bytes written / fio bytes written (journal, metadata, copy-on-write).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from fslab.system import cpu
from fslab.system import devstat
from fslab.metrics import declared
from fslab.records import Measurement

TICK = os.sysconf("SC_CLK_TCK")   # /proc/stat and /proc/PID/stat count in these
_TICK = TICK


def process_cpu_seconds(pid: int) -> float | None:
    """utime + stime of a process (all its threads), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()   # the command name may hold spaces
    return (int(fields[11]) + int(fields[12])) / _TICK   # fields 14, 15 of stat(5)


@dataclass
class FioTotals:
    read_bytes: int = 0
    write_bytes: int = 0
    ops: int = 0


def fio_totals(doc: dict) -> FioTotals:
    """Bytes and I/Os fio completed, summed over its jobs (client/server aggregates left out)."""
    t = FioTotals()
    entries = doc.get("jobs") if "jobs" in doc else doc.get("client_stats")
    for job in entries or []:
        if str(job.get("jobname", "")).strip() == "All clients":
            continue
        for direction in ("read", "write", "trim"):
            d = job.get(direction)
            if not isinstance(d, dict):
                continue
            n = int(d.get("io_bytes", 0) or 0)
            if direction == "read":
                t.read_bytes += n
            elif direction == "write":
                t.write_bytes += n
            t.ops += int(d.get("total_ios", 0) or 0)
    return t


@dataclass
class UnitAccount:
    """`acct = UnitAccount.start(devices, daemon_pid)`, measure, `acct.stop()`."""
    devices: list[str]
    daemon_pid: int | None = None
    dev0: devstat.DevCounters = field(default_factory=devstat.DevCounters)
    cpu0: cpu.CpuSample | None = None
    daemon0: float | None = None
    dev: devstat.DevCounters = field(default_factory=devstat.DevCounters)
    cpu_seconds: float = 0.0
    cpu_busy_percent: float = 0.0
    daemon_cpu_seconds: float | None = None

    @classmethod
    def start(cls, devices: list[str], daemon_pid: int | None = None) -> "UnitAccount":
        a = cls(devstat.block_devices(devices), daemon_pid)
        a.daemon0 = process_cpu_seconds(daemon_pid) if daemon_pid else None
        a.dev0 = devstat.read(a.devices)
        a.cpu0 = cpu.sample()
        return a

    def stop(self) -> None:
        c1 = cpu.sample()
        self.dev = devstat.read(self.devices) - self.dev0
        self.cpu_seconds = (c1.busy - self.cpu0.busy) / _TICK
        self.cpu_busy_percent = cpu.busy_percent(self.cpu0, c1)
        if self.daemon_pid and self.daemon0 is not None:
            now = process_cpu_seconds(self.daemon_pid)
            self.daemon_cpu_seconds = None if now is None else now - self.daemon0

    def measurements(self, fio_doc: dict | None, elapsed_s: float,
                     artifact: str | None = None) -> list[Measurement]:
        def m(metric, value):
            return declared("fio").measure(metric, value, artifact)
        out = [m("cpu_seconds", self.cpu_seconds)]
        if self.daemon_cpu_seconds is not None:
            out.append(m("daemon_cpu_seconds", self.daemon_cpu_seconds))
        if self.devices:
            out += [m("device_read_bytes", self.dev.read_bytes),
                    m("device_write_bytes", self.dev.write_bytes),
                    m("device_ios", self.dev.ios),
                    m("device_busy_time", self.dev.busy_ms / 1000.0)]
        if fio_doc is None:
            return out
        t = fio_totals(fio_doc)
        out += [m("read_io_bytes", t.read_bytes), m("write_io_bytes", t.write_bytes)]
        if self.devices and t.read_bytes > 0:
            out.append(m("device_read_share", self.dev.read_bytes / t.read_bytes))
        if self.devices and t.write_bytes > 0:
            out.append(m("write_amplification", self.dev.write_bytes / t.write_bytes))
        if self.cpu_seconds > 0 and t.ops > 0:
            out.append(m("ops_per_cpu_second", t.ops / self.cpu_seconds))
            if elapsed_s > 0 and self.cpu_busy_percent > 0:
                # S0's "efficiency": IOPS per % of the machine's CPU (a rescaling of the
                # line above, so described but not ranked a second time)
                out.append(m("ops_per_cpu_percent", t.ops / elapsed_s / self.cpu_busy_percent))
        return out
