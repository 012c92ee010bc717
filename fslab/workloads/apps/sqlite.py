"""sqlite: a real SQLite database on the filesystem under test, journal_mode WAL and DELETE.

One unit: a fresh filesystem and a new database file on it, loaded untimed (ROWS rows,
1,000 per transaction), then for DURATION seconds transactions of 10 inserts, 10 indexed
lookups and 1 update, each its own BEGIN ... COMMIT with synchronous = FULL (the
workload: fslab/workloads/apps/sqlite_load.py, run as its own process through Python's
sqlite3 module, i.e. Debian's libsqlite3). Answer: transactions per second. A commit
waits for the journal to reach the device: DELETE writes and fsyncs a rollback journal
and the database and deletes the journal; WAL appends to the write-ahead log and fsyncs it.
"""
from __future__ import annotations

import json
import shlex
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from fslab.errors import FslabError, StepFailed
from fslab.workloads.apps.programs import whole_option
from fslab.plan.profiles import MiB, Profile
from fslab.records import Measurement
from fslab.system.devstat import source_device_of
from fslab.workloads.apps import process
from fslab.workloads.apps.accounting import AppAccount
from fslab.workloads.apps.process import Account
from fslab.workloads.base import Case, CacheUse, Suite, UnitContext, UnitFailed, register

LOAD = Path(__file__).with_name("sqlite_load.py")
WORKLOADS = ("wal", "delete")
ROWS = {"smoke": 10_000, "quick": 100_000, "standard": 1_000_000, "paper": 1_000_000}
DURATION_S = {"smoke": 3, "quick": 10, "standard": 60, "paper": 300}
KNOWN = {"rows", "duration"}
ROW_BYTES = 200      # a row with its index entry, on disk


@dataclass(frozen=True)
class SqliteConfig:
    journal_mode: str
    rows: int
    duration_s: int
    synchronous: str = "FULL"

    def argv(self, phase: str, db: str, seed: int | str) -> list[str]:
        return [sys.executable, str(LOAD), phase, db, self.journal_mode.upper(), str(self.rows),
                str(self.duration_s), str(seed)]

    def timeout(self) -> float:
        return 120 + 2 * self.duration_s + self.rows / 5000


@dataclass(frozen=True)
class SqliteResult:
    journal_mode: str
    sqlite_version: str
    transactions: int
    elapsed_s: float
    database_bytes: int

    @property
    def tps(self) -> float:
        return self.transactions / self.elapsed_s if self.elapsed_s > 0 else 0.0


def parse_result(text: str) -> SqliteResult:
    """The workload's one JSON line."""
    try:
        d = json.loads(text.strip().splitlines()[-1])
        return SqliteResult(d["journal_mode"], d["sqlite_version"], int(d["transactions"]),
                            float(d["elapsed_seconds"]), int(d["database_bytes"]))
    except (IndexError, ValueError, KeyError, TypeError):
        raise StepFailed(f"the SQLite workload printed no result: {text.strip()[-200:]!r}") from None


def _whole(o: dict, key: str, default: int) -> int:
    return whole_option("sqlite", o, key, default)


@register
class SqliteSuite(Suite):
    name = "sqlite"
    needs_files = "writes a database file: needs a filesystem"
    description = ("SQLite transactions (inserts, indexed lookups, an update) with journal_mode "
                   "WAL and DELETE, synchronous FULL; transactions per second")

    def cases(self, spec, profile: Profile) -> list[Case]:
        o, names = self.options(spec, KNOWN, WORKLOADS)
        rows = _whole(o, "rows", ROWS[profile.name])
        duration = _whole(o, "duration", DURATION_S[profile.name])
        return [Case(n, {"rows": rows, "duration": duration},
                     config=SqliteConfig(n, rows, duration),
                     image_bytes=4 * rows * ROW_BYTES + 256 * MiB) for n in names]

    def describe(self, case: Case) -> dict:
        cfg: SqliteConfig = case.config
        return {"parameters": asdict(cfg),
                "commands": [shlex.join(cfg.argv(phase, "<mount>/sqlite.db", "<seed>"))
                             for phase in ("load", "run")]}

    def estimate_seconds(self, case: Case) -> float | None:
        cfg: SqliteConfig = case.config
        # the load at ~110,000 rows/s beside the run: units of 3.5 s (10,000 rows, 3 s)
        # and 11.3 s (100,000 rows, 10 s) on this project's 2-core machine (ext4)
        return 0.5 + cfg.duration_s + cfg.rows / 110_000

    def cache_policy(self, page_cache: str) -> CacheUse:
        return CacheUse("SQLite's own I/O at every policy: buffered, each commit fsynced "
                        "(synchronous = FULL)", buffered=True)

    def measure(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        cfg: SqliteConfig = case.config
        out, out_rel = ctx.artifact("sqlite.json")
        log, _ = ctx.artifact("sqlite.log")
        ctx.note_cache_policy(self)
        me = Account.current()
        m = self.metrics.measure
        with self.mounted(ctx, case) as (path, inst):
            devices = inst.devices if inst is not None else \
                [d for d in [source_device_of(str(path))] if d]
            daemon = ctx.driver.serving_daemon()
            db, seed = str(path / "sqlite.db"), ctx.seed("sqlite")
            try:
                loaded = process.run(cfg.argv("load", db, seed), me, log, cfg.timeout(),
                                     stdout=log, cwd=path)
                acct = AppAccount.start(devices, daemon[1] if daemon else None)
                done = process.run(cfg.argv("run", db, seed), me, log,
                                   ctx.unit_timeout or cfg.timeout(), stdout=out, cwd=path)
                acct.stop(path)
                result = parse_result(out.read_text())
            except StepFailed as e:
                raise UnitFailed(str(e)) from None
        ctx.note_workload(sqlite_version=result.sqlite_version,
                          journal_mode=result.journal_mode, synchronous="FULL")
        ms = [m("tps", result.tps, out_rel), m("transactions", result.transactions, out_rel),
              m("elapsed", result.elapsed_s, out_rel),
              m("database_bytes", result.database_bytes, out_rel)]
        ms.append(m("load_seconds", loaded.elapsed_s, out_rel))
        return ms + acct.measurements(self.metrics, result.transactions, "transaction",
                                      done.cpu_s, out_rel)
