"""A PostgreSQL 15 cluster on the filesystem under test, for one unit.

`with PostgresCluster(...) as pg:` runs initdb (data directory and WAL both under the
mount), starts the postmaster as the `postgres` user with no TCP listener (its Unix
socket in a private directory off the filesystem under test), and on leaving stops it
(fast shutdown, then SIGKILL to its whole family after STOP_S) whatever happened. The
server's stderr is its log, kept with the unit; a server that does not start, or dies,
fails the unit with that log's last lines (`ServerFailed`).

Every setting is PostgreSQL's default (fsync, synchronous_commit, full_page_writes,
shared_buffers = 128 MB, max_wal_size = 1 GB, wal_sync_method = fdatasync) except the
listener: the settings in force are read back from the server (`settings`) and recorded.

The postmaster is noted in fslab's resource list before it can listen (kind "app-server"),
so `fslab cleanup` stops a server a killed fslab left behind, before the mounts.
"""
from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

from fslab.errors import StepFailed
from fslab.system import state
from fslab.system.proc import kill_family, process_family
from fslab.workloads.apps import process
from fslab.workloads.apps.process import Account
from fslab.workloads.apps.programs import INITDB, PG_ISREADY, POSTGRES, PSQL

INITDB_S = 180
START_S = 60
STOP_S = 60
QUERY_S = 120
# read back and recorded: the durability settings stay PostgreSQL's defaults
SHOWN = ("fsync", "synchronous_commit", "full_page_writes", "wal_sync_method",
         "shared_buffers", "max_wal_size", "checkpoint_timeout", "wal_level")
_TICK = os.sysconf("SC_CLK_TCK")


class ServerFailed(StepFailed):
    """The server did not start or died; the message ends with its log's last lines."""


class PostgresCluster:
    def __init__(self, root: Path, socket_dir: Path, log: Path, account: Account):
        self.data = root / "pgdata"
        self.socket_dir, self.log, self.account = socket_dir, log, account
        # initdb's, pg_isready's and psql's output: apart, so the server log's tail is its own
        self.client_log = log.with_name("postgres-commands.log")
        self.proc = None

    @property
    def env(self) -> dict:
        return {"PATH": "/usr/bin:/bin", "LC_ALL": "C", "PGHOST": str(self.socket_dir),
                "PGUSER": "postgres", "PGDATABASE": "postgres", "HOME": str(self.socket_dir)}

    def server_argv(self) -> list[str]:
        return self.argv_shape(str(self.data), str(self.socket_dir))

    @staticmethod
    def argv_shape(data: str = "<mount>/postgres/pgdata", sockets: str = "<socket dir>") -> list[str]:
        """The server's command line: every setting its default but the listener."""
        return [POSTGRES.path, "-D", data, "-c", "listen_addresses=",
                "-c", f"unix_socket_directories={sockets}"]

    def __enter__(self) -> "PostgresCluster":
        try:
            self.initdb()
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def initdb(self) -> None:
        self.account.own(self.data)
        process.run([INITDB.path, "-D", str(self.data), "-U", "postgres", "-A", "trust",
                     "-E", "UTF8", "--locale=C", "--no-instructions"],
                    self.account, self.client_log, INITDB_S, env=self.env, cwd=self.socket_dir)

    def start(self) -> None:
        self.proc = process.start(self.server_argv(), self.account, self.log, env=self.env,
                                  cwd=self.socket_dir)
        state.note("app-server", str(self.proc.pid), match="postgres", data=str(self.data))
        end = time.monotonic() + START_S
        while time.monotonic() < end:
            self.check_alive("did not start")
            r = process.run([PG_ISREADY.path, "-q", "-t", "2"], self.account, self.client_log, 30,
                            env=self.env, check=False)
            if r.returncode == 0:
                return
            time.sleep(0.2)
        raise ServerFailed(f"postgres did not accept connections within {START_S} s: "
                           f"{server_tail(self.log)}")

    def check_alive(self, what: str = "died") -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise ServerFailed(f"postgres {what} ({process.exit_text(self.proc.returncode)}); "
                               f"its log: {server_tail(self.log)}")

    def query(self, sql: str, out: Path) -> str:
        """One SQL statement's result (unaligned, tuples only), through psql."""
        out.unlink(missing_ok=True)
        try:
            process.run([PSQL.path, "-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql],
                        self.account, self.client_log, QUERY_S, env=self.env, stdout=out)
        except StepFailed:
            self.check_alive()
            raise
        return out.read_text().strip()

    def settings(self, out: Path) -> dict[str, str]:
        names = ", ".join(f"'{n}'" for n in SHOWN)
        # current_setting() says a setting as SHOW does ('128MB'); setting || unit was
        # its count of units glued to the unit ('16384' + '8kB' = '163848kB')
        rows = self.query("SELECT name, current_setting(name) FROM pg_settings "
                          f"WHERE name IN ({names}) ORDER BY name", out)
        return dict(line.split("|", 1) for line in rows.splitlines() if "|" in line)

    def cpu_seconds(self) -> float:
        """CPU of the server so far: every live process of its family plus what its
        exited (reaped) children used, from /proc."""
        if self.proc is None:
            return 0.0
        total = 0.0
        for p in process_family(self.proc.pid):
            fields = _stat(p.pid)
            if fields:
                total += (int(fields[11]) + int(fields[12])) / _TICK
                if p.pid == self.proc.pid:    # cutime + cstime: its reaped backends
                    total += (int(fields[13]) + int(fields[14])) / _TICK
        return total

    def stop(self) -> None:
        """Fast shutdown (SIGINT: sessions rolled back, a checkpoint written), then SIGKILL
        to whatever of its family is left after STOP_S; reaped, forgotten."""
        p, self.proc = self.proc, None
        if p is None:
            return
        try:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGINT)
                try:
                    p.wait(timeout=STOP_S)
                except Exception:
                    pass
        finally:
            kill_family(p.pid)
            try:
                p.wait(timeout=10)
            except Exception:
                pass
            state.forget("app-server", str(p.pid))


# '2026-11-28 21:41:01.356 UTC [3526] ': the same on every line of the server's log
_LOG_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \w+ \[\d+\] ", re.M)


def server_tail(log: Path, lines: int = 6) -> str:
    """The server log's last lines without their time and pid: what went wrong, in a
    failure's one line (with them, 8 lines were ~900 characters)."""
    try:
        text = _LOG_PREFIX.sub("", log.read_text(errors="replace"))
    except OSError:
        return ""
    kept: list[str] = []
    for line in text.splitlines():
        line = " ".join(line.split())
        if line and (not kept or kept[-1] != line):    # each backend says its FATAL alike
            kept.append(line)
    return " | ".join(kept[-lines:])


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


@state.handler("app-server")
def _left_running(e: dict) -> None:
    """A server a killed fslab left: stopped with its family if that pid is still it."""
    pid = int(e["id"])
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return
    if e.get("match", "") in cmdline:
        kill_family(pid)
