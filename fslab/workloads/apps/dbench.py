"""dbench: dbench 4 with its NetBench-derived client.txt (a Windows file server's mix of
creates, reads, writes, renames, unlinks, directory listings and flushes), N clients, on
the filesystem under test.

One unit: a fresh filesystem, `dbench -c /usr/share/dbench/client.txt -D <mount> -t
DURATION CLIENTS` (the load file from Debian's dbench package), its output kept. Answer:
throughput as dbench reports it (its MB/sec are 10^6 bytes per second of the load file's
reads and writes, after its warmup of a fifth of the time), with its max latency beside it
(the slowest single operation, in any client). dbench's cleanup (deleting its tree) runs
after its timing and is not part of the throughput.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import asdict, dataclass

from fslab.errors import FslabError, StepFailed
from fslab.workloads.apps.programs import whole_option
from fslab.plan.profiles import MiB, Profile
from fslab.records import Measurement
from fslab.system.devstat import source_device_of
from fslab.workloads.apps import process
from fslab.workloads.apps.accounting import AppAccount
from fslab.workloads.apps.process import Account
from fslab.workloads.apps.programs import DBENCH, DBENCH_CLIENT
from fslab.workloads.base import Case, CacheUse, Suite, UnitContext, UnitFailed, register

CLIENTS = {"smoke": 2, "quick": 4, "standard": 8, "paper": 16}
DURATION_S = {"smoke": 3, "quick": 10, "standard": 60, "paper": 300}
KNOWN = {"clients", "duration"}
MAX_CLIENTS = 512
CLIENT_BYTES = 64 * MiB     # the tree one client of client.txt builds, with room to spare


@dataclass(frozen=True)
class DbenchConfig:
    clients: int
    duration_s: int

    def argv(self, directory: str) -> list[str]:
        return [DBENCH.path, "-c", str(DBENCH_CLIENT), "-D", directory,
                "-t", str(self.duration_s), str(self.clients)]

    def timeout(self) -> float:
        return 180 + 2 * self.duration_s + 2 * self.clients


@dataclass(frozen=True)
class DbenchResult:
    throughput_mb_s: float      # dbench's MB/sec: 10^6 bytes per second
    clients: int
    max_latency_ms: float
    operations: int             # the operation table's counts, summed


def parse_output(text: str) -> DbenchResult:
    m = re.search(r"^Throughput ([0-9.eE+]+) MB/sec.*?\s(\d+) clients\s.*max_latency=([0-9.]+) ms",
                  text, re.M)
    if m is None:
        raise StepFailed("dbench printed no Throughput line: "
                         + " | ".join(text.strip().splitlines()[-3:]))
    ops = sum(int(c) for c in re.findall(r"^ (?:[A-Z][A-Za-z]+)\s+(\d+)\s+[0-9.]+\s+[0-9.]+\s*$",
                                          text, re.M))
    return DbenchResult(float(m[1]), int(m[2]), float(m[3]), ops)


def _whole(o: dict, key: str, default: int, high: int | None = None) -> int:
    return whole_option("dbench", o, key, default, high=high)


@register
class DbenchSuite(Suite):
    name = "dbench"
    needs_files = "a file server's load: needs a filesystem"
    description = "dbench 4 with its NetBench client.txt, N clients; throughput and max latency"

    def cases(self, spec, profile: Profile) -> list[Case]:
        o, _ = self.options(spec, KNOWN)
        clients = _whole(o, "clients", CLIENTS[profile.name], MAX_CLIENTS)
        duration = _whole(o, "duration", DURATION_S[profile.name])
        return [Case("client.txt", {"clients": clients, "duration": duration},
                     config=DbenchConfig(clients, duration),
                     image_bytes=clients * CLIENT_BYTES + 512 * MiB)]

    def supports(self, driver) -> str | None:
        return super().supports(driver) or DBENCH.missing()

    def describe(self, case: Case) -> dict:
        return {"parameters": asdict(case.config),
                "commands": [shlex.join(case.config.argv("<mount>"))]}

    def estimate_seconds(self, case: Case) -> float | None:
        # units of 3.3 s (2 clients, 3 s) and 12.4 s (4 clients, 10 s) on this
        # project's 2-core machine (ext4)
        return 1.5 + case.config.duration_s

    def cache_policy(self, page_cache: str) -> CacheUse:
        return CacheUse("dbench's own I/O at every policy: buffered, with the flushes its "
                        "load file asks for", buffered=True)

    def measure(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        cfg: DbenchConfig = case.config
        if DBENCH.missing():
            raise UnitFailed(DBENCH.missing())
        out, out_rel = ctx.artifact("dbench.txt")
        ctx.note_cache_policy(self)
        me = Account.current()
        m = self.metrics.measure
        with self.mounted(ctx, case) as (path, inst):
            devices = inst.devices if inst is not None else \
                [d for d in [source_device_of(str(path))] if d]
            daemon = ctx.driver.serving_daemon()
            acct = AppAccount.start(devices, daemon[1] if daemon else None)
            try:
                done = process.run(cfg.argv(str(path)), me, out, ctx.unit_timeout or cfg.timeout(),
                                   cwd=path)
                acct.stop(path)
                result = parse_output(out.read_text(errors="replace"))
            except StepFailed as e:
                raise UnitFailed(str(e)) from None
        ms = [m("throughput", result.throughput_mb_s * 1e6, out_rel),
              m("max_latency", result.max_latency_ms / 1000, out_rel),
              m("operations", result.operations, out_rel)]
        return ms + acct.measurements(self.metrics, result.operations, "operation",
                                      done.cpu_s, out_rel)
