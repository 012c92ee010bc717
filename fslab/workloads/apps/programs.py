"""The application programs the app suites drive: where each is, its Debian package, and
its version (for `fslab doctor` and a missing program's one-line refusal)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from fslab.errors import FslabError
from fslab.system.proc import run, which

PG_BIN = Path("/usr/lib/postgresql/15/bin")


@dataclass(frozen=True)
class Program:
    name: str          # what the suite runs
    package: str       # the Debian package that ships it
    path: str          # absolute, or a name on PATH

    def found(self) -> str | None:
        return self.path if Path(self.path).is_absolute() and Path(self.path).exists() \
            else (None if Path(self.path).is_absolute() else which(self.path))

    def missing(self) -> str | None:
        """None when installed, else one line naming the package."""
        return None if self.found() else f"{self.name} is not installed (Debian package {self.package})"

    def version(self) -> str | None:
        """Its version as the package says (dpkg is the one source every program shares:
        db_bench and dbench have no version flag)."""
        if not self.found():
            return None
        r = run(["dpkg-query", "-W", "-f", "${Version}", self.package], check=False, timeout=20)
        return r.stdout.strip() or "present" if r.ok else "present"


POSTGRES = Program("postgres", "postgresql-15", str(PG_BIN / "postgres"))
INITDB = Program("initdb", "postgresql-15", str(PG_BIN / "initdb"))
PGBENCH = Program("pgbench", "postgresql-15", str(PG_BIN / "pgbench"))
PSQL = Program("psql", "postgresql-15", str(PG_BIN / "psql"))
PG_ISREADY = Program("pg_isready", "postgresql-15", str(PG_BIN / "pg_isready"))
SQLITE3 = Program("sqlite3", "sqlite3", "sqlite3")
DBENCH = Program("dbench", "dbench", "dbench")
DB_BENCH = Program("db_bench", "rocksdb-tools", "db_bench")
DBENCH_CLIENT = Path("/usr/share/dbench/client.txt")

# one line per application in `fslab doctor`, and the packages `doctor --install` adds
APPLICATIONS = (PGBENCH, SQLITE3, DBENCH, DB_BENCH)
PACKAGES = tuple(dict.fromkeys(p.package for p in APPLICATIONS))


def version_number(text: str) -> str:
    """'15.20-0+deb12u1' -> '15.20' (the upstream part of a Debian version)."""
    m = re.match(r"(?:\d+:)?([0-9][0-9.]*)", text)
    return m.group(1).rstrip(".") if m else text


def whole_option(suite: str, o: dict, key: str, default: int, low: int = 1,
                 high: int | None = None) -> int:
    """A suite option that must be a whole number in [low, high]: refused in one line
    (before any run row) otherwise."""
    v = o.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < low or (high and v > high):
        raise FslabError(f"{suite} {key} = {v!r}: a whole number from {low}"
                         + (f" to {high}" if high else ""))
    return v
