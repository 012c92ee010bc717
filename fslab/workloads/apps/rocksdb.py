"""rocksdb: RocksDB's db_bench (Debian's rocksdb-tools) on the filesystem under test.

One unit: a fresh filesystem, a database made on it, then the case's benchmark in its own
db_bench process, so that its CPU and device bytes are counted alone:

  fillrandom       KEYS random-key puts into an empty database (the measured process)
  overwrite        fillrandom KEYS (untimed), then DURATION s of random overwrites
  overwrite-sync   the same with --sync=1: every write waits for its WAL fsync
  readrandom       fillrandom KEYS (untimed), then DURATION s of random point reads

16-byte keys and 100-byte values (db_bench's defaults), one thread, every other option
db_bench's default (Snappy compression, 64 MB memtable, its 8 MB block cache). Answer:
operations per second as db_bench reports the benchmark, beside the p99 of its own
per-operation histogram (--histogram=1).
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
from fslab.workloads.apps.programs import DB_BENCH
from fslab.workloads.base import Case, CacheUse, Suite, UnitContext, UnitFailed, register

# case -> (db_bench benchmark, --sync, whether a fill comes first)
WORKLOADS = {"fillrandom": ("fillrandom", False, False),
             "overwrite": ("overwrite", False, True),
             "overwrite-sync": ("overwrite", True, True),
             "readrandom": ("readrandom", False, True)}
KEYS = {"smoke": 50_000, "quick": 500_000, "standard": 5_000_000, "paper": 10_000_000}
DURATION_S = {"smoke": 2, "quick": 10, "standard": 60, "paper": 300}
KNOWN = {"keys", "duration", "value_size"}
VALUE_BYTES = 100
# what db_bench prints when built with assertions (Debian's rocksdb-tools is)
ASSERTIONS = "WARNING: Assertions are enabled; benchmarks unnecessarily slow"
ASSERTIONS_NOTE = ("db_bench as built by its package checks assertions (it says 'Assertions are "
                   "enabled; benchmarks unnecessarily slow'): its operations per second are "
                   "below a release build's, and compared between filesystems with that cost "
                   "in every one")


@dataclass(frozen=True)
class RocksConfig:
    workload: str
    keys: int
    duration_s: int
    value_size: int = VALUE_BYTES

    def _argv(self, db: str, benchmark: str, existing: bool, sync: bool, timed: bool) -> list[str]:
        return [DB_BENCH.path, f"--benchmarks={benchmark}", f"--db={db}", f"--num={self.keys}",
                f"--value_size={self.value_size}", "--histogram=1", "--threads=1",
                f"--use_existing_db={int(existing)}", f"--sync={int(sync)}",
                *([f"--duration={self.duration_s}"] if timed else [])]

    def fill_argv(self, db: str) -> list[str] | None:
        if not WORKLOADS[self.workload][2]:
            return None
        return self._argv(db, "fillrandom", False, False, False)

    def run_argv(self, db: str) -> list[str]:
        benchmark, sync, filled = WORKLOADS[self.workload]
        return self._argv(db, benchmark, filled, sync, timed=filled)

    def timeout(self) -> float:
        return 180 + 3 * self.duration_s + self.keys / 10_000


@dataclass(frozen=True)
class DbBenchResult:
    benchmark: str
    ops_per_s: float
    operations: int
    p50_us: float
    p99_us: float
    mean_us: float
    max_us: float
    assertions: bool = False    # db_bench said its build checks assertions (Debian's does)


def parse_output(text: str, benchmark: str) -> DbBenchResult:
    """The benchmark's line ('overwrite : 5.334 micros/op 187451 ops/sec 0.107 seconds 20000
    operations;') and the histogram after it (Count/Average, Min/Median/Max, Percentiles)."""
    head = re.search(rf"^{re.escape(benchmark)}\s+:\s+[0-9.]+ micros/op (\d+) ops/sec "
                     rf"[0-9.]+ seconds (\d+) operations;", text, re.M)
    if head is None:
        raise StepFailed(f"db_bench printed no {benchmark!r} result: "
                         + " | ".join(text.strip().splitlines()[-3:]))
    rest = text[head.end():]
    count = re.search(r"^Count: (\d+) Average: ([0-9.]+)", rest, re.M)
    spread = re.search(r"^Min: ([0-9.]+)\s+Median: ([0-9.]+)\s+Max: ([0-9.]+)", rest, re.M)
    p99 = re.search(r"^Percentiles:.*? P99: ([0-9.]+)", rest, re.M)
    if not (count and spread and p99):
        raise StepFailed(f"db_bench printed no histogram after {benchmark!r} (--histogram=1)")
    return DbBenchResult(benchmark, float(head[1]), int(head[2]), float(spread[2]),
                         float(p99[1]), float(count[2]), float(spread[3]),
                         assertions=ASSERTIONS in text)


def _whole(o: dict, key: str, default: int) -> int:
    return whole_option("rocksdb", o, key, default)


@register
class RocksdbSuite(Suite):
    name = "rocksdb"
    needs_files = "makes a RocksDB database: needs a filesystem"
    description = ("RocksDB db_bench: fillrandom, overwrite (and with --sync), readrandom; "
                   "ops/s and p99 latency")

    def cases(self, spec, profile: Profile) -> list[Case]:
        o, names = self.options(spec, KNOWN, tuple(WORKLOADS))
        keys = _whole(o, "keys", KEYS[profile.name])
        duration = _whole(o, "duration", DURATION_S[profile.name])
        value = _whole(o, "value_size", VALUE_BYTES)
        size = keys * (value + 16)
        return [Case(n, {"keys": keys, "duration": duration, "value_size": value},
                     config=RocksConfig(n, keys, duration, value),
                     image_bytes=4 * size + 512 * MiB) for n in names]

    def supports(self, driver) -> str | None:
        return super().supports(driver) or DB_BENCH.missing()

    def describe(self, case: Case) -> dict:
        cfg: RocksConfig = case.config
        argvs = [cfg.fill_argv("<mount>/db"), cfg.run_argv("<mount>/db")]
        return {"parameters": asdict(cfg), "commands": [shlex.join(a) for a in argvs if a]}

    def estimate_seconds(self, case: Case) -> float | None:
        cfg: RocksConfig = case.config
        # the fill at ~120,000 puts/s beside the timed run: units of 0.4 s and 3.4 s
        # (fillrandom, 50,000 and 500,000 keys), 2.7-3.2 s and 15.1-15.7 s (the others,
        # 2 s and 10 s) on this project's 2-core machine (ext4)
        fill = cfg.keys / 120_000
        return 0.5 + fill + (cfg.duration_s if WORKLOADS[cfg.workload][2] else 0)

    def cache_policy(self, page_cache: str) -> CacheUse:
        return CacheUse("RocksDB's own I/O at every policy: buffered reads and writes, WAL "
                        "fsynced only in overwrite-sync", buffered=True)

    def measure(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        cfg: RocksConfig = case.config
        if DB_BENCH.missing():
            raise UnitFailed(DB_BENCH.missing())
        out, out_rel = ctx.artifact("db_bench.txt")
        log, _ = ctx.artifact("db_bench.log")
        ctx.note_cache_policy(self)
        me = Account.current()
        m = self.metrics.measure
        with self.mounted(ctx, case) as (path, inst):
            devices = inst.devices if inst is not None else \
                [d for d in [source_device_of(str(path))] if d]
            daemon = ctx.driver.serving_daemon()
            db = str(path / "db")
            try:
                fill = cfg.fill_argv(db)
                if fill:
                    process.run(fill, me, log, cfg.timeout(), cwd=path)
                acct = AppAccount.start(devices, daemon[1] if daemon else None)
                done = process.run(cfg.run_argv(db), me, log, ctx.unit_timeout or cfg.timeout(),
                                   stdout=out, cwd=path)
                acct.stop(path)
                result = parse_output(out.read_text(errors="replace"), WORKLOADS[cfg.workload][0])
            except StepFailed as e:
                raise UnitFailed(str(e)) from None
        if result.assertions:   # said with the numbers: the report's 'measured:' lines
            ctx.note_workload(program_note=ASSERTIONS_NOTE)
        ms = [m("ops", result.ops_per_s, out_rel), m("operations", result.operations, out_rel),
              m("latency_p99", result.p99_us / 1e6, out_rel),
              m("latency_p50", result.p50_us / 1e6, out_rel),
              m("latency_mean", result.mean_us / 1e6, out_rel),
              m("latency_max", result.max_us / 1e6, out_rel)]
        return ms + acct.measurements(self.metrics, result.operations, "operation",
                                      done.cpu_s, out_rel)
