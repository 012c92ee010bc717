"""pgbench: PostgreSQL 15 on the filesystem under test, TPC-B-like and select-only.

One unit: a fresh filesystem, `initdb` on it (data directory and WAL both there), the
server started as the `postgres` user with no TCP listener (fslab/workloads/apps/
postgres.py), `pgbench -i -s SCALE` (untimed, its time recorded as init_seconds), a
CHECKPOINT, then the timed run `pgbench -n -c CLIENTS -j THREADS -T DURATION` (with -S for
select-only) logging every transaction (-l; the log is written off the filesystem under
test, in the server's private socket directory, and kept gzipped with the unit). The
server is stopped and the filesystem torn down inside the unit, whatever happened.

Answer: tps as pgbench reports it (without the initial connection time), beside the p99
of the per-transaction latencies. PostgreSQL's durability settings are its defaults
(fsync, synchronous_commit, full_page_writes on) and its memory is its default
shared_buffers (128 MB); both are read back from the server and recorded, with the
database's size beside the machine's RAM: a database that fits in the page cache measures
the WAL and fsync path (TPC-B-like) or memory (select-only), not the filesystem's reads.
"""
from __future__ import annotations

import gzip
import os
import shlex
import shutil
import tempfile
from dataclasses import dataclass, asdict
from pathlib import Path

from fslab.errors import FslabError, StepFailed
from fslab.workloads.apps.programs import whole_option
from fslab.plan.profiles import MiB, Profile
from fslab.records import Measurement
from fslab.system import state
from fslab.system.devstat import source_device_of
from fslab.workloads.apps import process
from fslab.workloads.apps.accounting import AppAccount
from fslab.workloads.apps.pgbench_output import parse_summary, transaction_latencies
from fslab.workloads.apps.postgres import PostgresCluster, ServerFailed
from fslab.workloads.apps.process import Account
from fslab.workloads.apps.programs import PGBENCH, POSTGRES
from fslab.workloads.base import Case, CacheUse, Suite, UnitContext, UnitFailed, register

WORKLOADS = ("tpcb-like", "select-only")
# pgbench's usual sizes at paper (scale 100: a 1.5 GB database, 5 minutes), seconds at smoke
SCALE = {"smoke": 1, "quick": 10, "standard": 50, "paper": 100}
DURATION_S = {"smoke": 3, "quick": 10, "standard": 60, "paper": 300}
CLIENTS = 4
MAX_CLIENTS = 90                # PostgreSQL's default max_connections is 100 (3 reserved)
DB_BYTES_PER_SCALE = 16 * MiB   # pgbench_accounts' 100,000 rows and index per scale unit
KNOWN = {"scale", "clients", "duration", "read_only"}


@dataclass(frozen=True)
class PgbenchConfig:
    workload: str
    scale: int
    clients: int
    threads: int
    duration_s: int

    def init_argv(self) -> list[str]:
        return [PGBENCH.path, "-i", "-q", "-s", str(self.scale)]

    def run_argv(self, log_prefix: str) -> list[str]:
        return [PGBENCH.path, "-n", "-c", str(self.clients), "-j", str(self.threads),
                "-T", str(self.duration_s), "-l", f"--log-prefix={log_prefix}",
                *(["-S"] if self.workload == "select-only" else [])]

    def init_timeout(self) -> float:
        return 180 + 10 * self.scale

    def run_timeout(self) -> float:
        return 120 + 2 * self.duration_s


def _whole(o: dict, key: str, default: int, low: int, high: int | None = None) -> int:
    return whole_option("pgbench", o, key, default, low, high)


def threads_for(clients: int) -> int:
    """pgbench's -j: as many threads as CPUs, dividing the clients evenly."""
    cpus = os.cpu_count() or 1
    return max(d for d in range(1, min(clients, cpus) + 1) if clients % d == 0)


@register
class PgbenchSuite(Suite):
    name = "pgbench"
    needs_files = "runs a PostgreSQL cluster: needs a filesystem"
    description = ("PostgreSQL 15 pgbench on the filesystem: TPC-B-like and select-only; "
                   "tps and p99 transaction latency")

    def cases(self, spec, profile: Profile) -> list[Case]:
        o, names = self.options(spec, KNOWN, WORKLOADS)
        if "read_only" in o:
            if not isinstance(o["read_only"], bool):
                raise FslabError(f"pgbench read_only = {o['read_only']!r}: true or false")
            if not spec.workloads:
                names = ["select-only" if o["read_only"] else "tpcb-like"]
        scale = _whole(o, "scale", SCALE[profile.name], 1)
        clients = _whole(o, "clients", CLIENTS, 1, MAX_CLIENTS)
        duration = _whole(o, "duration", DURATION_S[profile.name], 1)
        db = scale * DB_BYTES_PER_SCALE
        cases = []
        for name in names:
            cfg = PgbenchConfig(name, scale, clients, threads_for(clients), duration)
            # the database three times over (tables, WAL, a vacuum's copies) and room for
            # max_wal_size's default 1 GB of WAL before a checkpoint recycles it
            cases.append(Case(name, {"scale": scale, "clients": clients, "duration": duration},
                              config=cfg, image_bytes=3 * db + 1100 * MiB))
        return cases

    def supports(self, driver) -> str | None:
        return super().supports(driver) or POSTGRES.missing() or PGBENCH.missing()

    def describe(self, case: Case) -> dict:
        cfg: PgbenchConfig = case.config
        return {"parameters": asdict(cfg),
                "commands": ["initdb -D <mount>/postgres/pgdata (as postgres)",
                             shlex.join(PostgresCluster.argv_shape()),
                             shlex.join(cfg.init_argv()), "psql -c CHECKPOINT",
                             shlex.join(cfg.run_argv("<socket dir>/tx"))]}

    def estimate_seconds(self, case: Case) -> float | None:
        cfg: PgbenchConfig = case.config
        # mkfs, initdb, start and stop ~2 s; pgbench -i ~0.2 s per scale unit: units of
        # 5.0 s at scale 1 for 3 s and 13.4 s at scale 10 for 10 s on this project's
        # 2-core machine (ext4 on a loop image; was 8 s + 1 s per scale: 2.4x too long)
        return 2.0 + 0.2 * cfg.scale + cfg.duration_s

    def cache_policy(self, page_cache: str) -> CacheUse:
        return CacheUse("PostgreSQL's own I/O at every policy: buffered through the page "
                        "cache, WAL fsynced at each commit (its defaults); the database's "
                        "size beside RAM says whether reads could reach the device",
                        buffered=True)

    def measure(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        cfg: PgbenchConfig = case.config
        for program in (POSTGRES, PGBENCH):
            if program.missing():
                raise UnitFailed(program.missing())
        account = Account.for_("postgres")
        server_log, server_rel = ctx.artifact("postgres.log")
        client_log, _ = ctx.artifact("pgbench.log")
        summary, summary_rel = ctx.artifact("pgbench.txt")
        settings_out, _ = ctx.artifact("settings.txt")
        ctx.note_cache_policy(self)
        # the socket and the transaction log live off the filesystem under test, private
        sockets = Path(tempfile.mkdtemp(prefix="fslab-pg-"))
        state.note("dir", str(sockets))
        account.own(sockets)
        ms: list[Measurement] = []
        m = self.metrics.measure
        try:
            with self.mounted(ctx, case) as (path, inst):
                account.reach(path)
                root = account.own(path / "postgres")
                with PostgresCluster(root, sockets, server_log, account) as pg:
                    init = process.run(cfg.init_argv(), account, client_log, cfg.init_timeout(),
                                       env=pg.env, cwd=sockets)
                    ms.append(m("init_seconds", init.elapsed_s, summary_rel))
                    pg.query("CHECKPOINT", settings_out)
                    db_bytes = int(pg.query("SELECT pg_database_size('postgres')", settings_out))
                    ms.append(m("database_bytes", db_bytes, summary_rel))
                    settings = pg.settings(settings_out)
                    self._say_memory(ctx, db_bytes, settings, cfg.workload)
                    devices = inst.devices if inst is not None else \
                        [d for d in [source_device_of(str(path))] if d]
                    daemon = ctx.driver.serving_daemon()
                    acct = AppAccount.start(devices, daemon[1] if daemon else None, pg.cpu_seconds)
                    done = process.run(cfg.run_argv(str(sockets / "tx")), account, client_log,
                                       ctx.unit_timeout or cfg.run_timeout(), env=pg.env,
                                       cwd=sockets, stdout=summary, check=False)
                    pg.check_alive()
                    if done.returncode != 0:
                        raise StepFailed(f"pgbench {process.exit_text(done.returncode)}: "
                                         f"{process.tail(client_log, 4)}")
                    # the durable end: the transactions' dirty pages written by a checkpoint
                    # (else the shutdown checkpoint wrote them, uncounted), then a syncfs
                    acct.stop(path, flush=lambda: pg.query("CHECKPOINT", settings_out))
            result = parse_summary(summary.read_text())
            logs = sorted(sockets.glob("tx.*"))
            lat = transaction_latencies(logs)
            _keep_gzipped(logs, ctx.artifact("transactions.log.gz")[0])
        except (ServerFailed, StepFailed) as e:
            raise UnitFailed(str(e), ms) from None
        finally:
            shutil.rmtree(sockets, ignore_errors=True)
            state.forget("dir", str(sockets))
        ms += [m("tps", result.tps, summary_rel),
               m("transactions", result.transactions, summary_rel),
               m("failed_transactions", result.failed, summary_rel),
               m("latency_p99", lat.p99_s, summary_rel), m("latency_mean", lat.mean_s, summary_rel),
               m("latency_p50", lat.p50_s, summary_rel), m("latency_max", lat.max_s, summary_rel)]
        ms += acct.measurements(self.metrics, result.transactions, "transaction",
                                done.cpu_s, summary_rel)
        return ms

    @staticmethod
    def _say_memory(ctx: UnitContext, db_bytes: int, settings: dict[str, str],
                    workload: str) -> None:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        # select-only writes nothing: with the database in the page cache no I/O of its
        # reaches the filesystem (decide says so of a race that includes it)
        ctx.note_workload(postgres_settings=settings, database_bytes=db_bytes, ram_bytes=ram,
                          database_vs_ram=database_vs_ram(db_bytes, ram, workload),
                          filesystem_io=not (workload == "select-only" and fits_in_memory(db_bytes, ram)))


def fits_in_memory(db_bytes: int, ram: int) -> bool:
    """The database fits in the page cache beside the server (under half of RAM)."""
    return db_bytes < ram / 2


def database_vs_ram(db_bytes: int, ram: int, workload: str) -> str:
    """What the database's size beside RAM makes of a workload: one that fits in the page
    cache reads from memory, so TPC-B-like measures its commits (WAL appends and their
    fsyncs) and select-only, which writes nothing, memory and CPU, not the filesystem."""
    size = f"database {db_bytes / MiB:.0f} MiB, RAM {ram / MiB:.0f} MiB: "
    if not fits_in_memory(db_bytes, ram):
        return size + "reads can reach the device"
    if workload == "select-only":
        return (size + "it fits in the page cache, so select-only (no writes) measures memory "
                "and CPU, not the filesystem's I/O")
    return (size + "it fits in the page cache, so the run measures the WAL and fsync path, "
            "not reads from the device")


def _keep_gzipped(logs: list[Path], dest: Path) -> None:
    """pgbench's per-thread transaction logs, concatenated into one gzip with the unit."""
    with gzip.open(dest, "wb", compresslevel=3) as out:
        for log in logs:
            with open(log, "rb") as f:
                shutil.copyfileobj(f, out)
