"""What an application's measured phase cost: the devices under the filesystem, the whole
machine's CPU (kernel threads and a FUSE daemon included), the FUSE daemon's own CPU, and
the application's server (its processes, from /proc) and client (its rusage) apart.

The counted region ends at a defined durable end, not when the program exits: the
program's own flush (PostgreSQL's CHECKPOINT) and then a syncfs of the filesystem
(`sync -f`) run inside it. Read at exit, the device bytes were whatever writeback had
reached by then (RocksDB fillrandom: 680 KB on ext4, 7 MB on xfs, for the same puts)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from fslab.fio.accounting import process_cpu_seconds
from fslab.metrics import Catalogue
from fslab.records import Measurement
from fslab.system import cpu, devstat
from fslab.system.proc import run

_TICK = os.sysconf("SC_CLK_TCK")
SYNC_S = 300        # a syncfs of a small loop image: seconds; a hung one fails the unit


@dataclass
class AppAccount:
    """`acct = AppAccount.start(devices, daemon_pid, server_cpu)`, run, `acct.stop(mount, flush)`."""
    devices: list[str]
    daemon_pid: int | None = None
    server_cpu: Callable[[], float] | None = None
    dev0: devstat.DevCounters = field(default_factory=devstat.DevCounters)
    dev: devstat.DevCounters = field(default_factory=devstat.DevCounters)
    cpu0: cpu.CpuSample | None = None
    cpu_seconds: float = 0.0
    cpu_busy_percent: float = 0.0
    load_per_cpu: float | None = None
    daemon0: float | None = None
    daemon_cpu_seconds: float | None = None
    server0: float = 0.0
    server_cpu_seconds: float | None = None

    @classmethod
    def start(cls, devices: list[str], daemon_pid: int | None = None,
              server_cpu: Callable[[], float] | None = None) -> "AppAccount":
        a = cls(devstat.block_devices(devices), daemon_pid, server_cpu)
        a.daemon0 = process_cpu_seconds(daemon_pid) if daemon_pid else None
        a.server0 = server_cpu() if server_cpu else 0.0
        a.dev0 = devstat.read(a.devices)
        a.cpu0 = cpu.sample()
        return a

    def stop(self, mount: Path | None, flush: Callable[[], object] | None = None) -> None:
        """End the counted region at the durable end: the program's own `flush` (if it has
        one), then a syncfs of the filesystem at `mount`, both counted (None: no syncfs,
        for a unit that failed and is counted no further)."""
        if flush is not None:
            flush()
        if mount is not None:
            run(["sync", "-f", str(mount)], timeout=SYNC_S)
        c1 = cpu.sample()
        self.dev = devstat.read(self.devices) - self.dev0
        self.cpu_seconds = (c1.busy - self.cpu0.busy) / _TICK
        self.cpu_busy_percent = cpu.busy_percent(self.cpu0, c1)
        # the run queue beside the busy share: saturated by this unit or by others
        self.load_per_cpu = os.getloadavg()[0] / (os.cpu_count() or 1)
        if self.daemon_pid and self.daemon0 is not None:
            now = process_cpu_seconds(self.daemon_pid)
            self.daemon_cpu_seconds = None if now is None else now - self.daemon0
        if self.server_cpu:
            self.server_cpu_seconds = self.server_cpu() - self.server0

    def measurements(self, catalogue: Catalogue, operations: float, unit_name: str,
                     client_cpu_s: float | None, artifact: str | None) -> list[Measurement]:
        """The counters, and per operation (a transaction, a db_bench op): device bytes
        written and operations per system-wide CPU-second. `unit_name` names the operation
        in the metrics ("transaction" -> device_write_bytes_per_transaction)."""
        def m(metric, value):
            return catalogue.measure(metric, value, artifact)
        out = [m("cpu_seconds", self.cpu_seconds),
               m("cpu_busy_system_wide", self.cpu_busy_percent)]
        if self.load_per_cpu is not None:
            out.append(m("load_per_cpu", self.load_per_cpu))
        if client_cpu_s is not None:
            out.append(m("client_cpu_seconds", client_cpu_s))
        if self.server_cpu_seconds is not None:
            out.append(m("server_cpu_seconds", self.server_cpu_seconds))
        if self.daemon_cpu_seconds is not None:
            out.append(m("daemon_cpu_seconds", self.daemon_cpu_seconds))
        if self.devices:
            out += [m("device_read_bytes", self.dev.read_bytes),
                    m("device_write_bytes", self.dev.write_bytes),
                    m("device_ios", self.dev.ios)]
            if operations > 0:
                out.append(m(f"device_write_bytes_per_{unit_name}",
                             self.dev.write_bytes / operations))
        if operations > 0 and self.cpu_seconds > 0:
            out.append(m(f"{unit_name}s_per_cpu_second", operations / self.cpu_seconds))
        return out
