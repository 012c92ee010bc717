"""The SQLite store. One transaction per finished unit: a kill -9 loses at most the unit in flight.

Tables
  meta     key/value (schema_version)
  runs     run_id, plan (verbatim TOML), environment (JSON), status, started, finished, ...
  units    one row per (host, fs, variant, suite, case, params, iteration): status, message
  records  one row per measured value (fslab.records.RECORD_COLUMNS)
"""
from __future__ import annotations

import os
import sqlite3
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import orjson

from fslab import schema
from fslab.errors import FslabError
from fslab.records import RECORD_COLUMNS, Record, UnitKey

if TYPE_CHECKING:                       # pandas loads only where records are read
    import pandas as pd

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY,
  name TEXT,
  plan TEXT NOT NULL,
  environment TEXT NOT NULL DEFAULT '{}',
  status TEXT NOT NULL,          -- running | finished | interrupted | failed | imported
  started REAL NOT NULL,
  finished REAL,
  command TEXT,
  profile TEXT,
  source TEXT                    -- 'fslab' or 'import:<path>'
);
CREATE TABLE IF NOT EXISTS units (
  run_id TEXT NOT NULL, host TEXT NOT NULL, fs TEXT NOT NULL, variant TEXT NOT NULL,
  suite TEXT NOT NULL, "case" TEXT NOT NULL, params TEXT NOT NULL, iteration INTEGER NOT NULL,
  status TEXT NOT NULL,          -- done | failed
  message TEXT, started REAL, finished REAL, artifact_dir TEXT,
  PRIMARY KEY (run_id, host, fs, variant, suite, "case", params, iteration)
);
CREATE TABLE IF NOT EXISTS records (
  run_id TEXT NOT NULL, host TEXT NOT NULL, fs TEXT NOT NULL, variant TEXT NOT NULL,
  suite TEXT NOT NULL, "case" TEXT NOT NULL, params TEXT NOT NULL, iteration INTEGER NOT NULL,
  metric TEXT NOT NULL, value REAL, unit TEXT NOT NULL, better TEXT, artifact TEXT, ts REAL
);
-- every query picks records by run: keyed by run alone, a bulk insert only appends to it
DROP INDEX IF EXISTS records_run;
CREATE INDEX IF NOT EXISTS records_by_run ON records (run_id);
"""

_COLS = ", ".join(f'"{c}"' for c in RECORD_COLUMNS)
_UNIT_COLS = ("run_id", "host", "fs", "variant", "suite", "case", "params", "iteration")


def new_run_id() -> str:
    """Sortable and readable: 20261122-081500-ab12."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:4]


class Store:
    def __init__(self, root: str | Path):
        # absolute: a unit's artifacts are handed to fio, which may run in the mount
        self.root = Path(root).absolute()
        self.path = self.root / "fslab.sqlite"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        except (OSError, sqlite3.OperationalError) as e:
            raise FslabError(f"cannot use results directory {self.root}: "
                             f"{getattr(e, 'strerror', None) or e}") from None
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")   # committed means on disk
        self.db.row_factory = sqlite3.Row
        self._check_schema()

    def _check_schema(self) -> None:
        has_meta = self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
        if has_meta:
            row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            found = int(row[0]) if row else 0
            if found != SCHEMA_VERSION:
                newer = found > SCHEMA_VERSION
                raise FslabError(
                    f"{self.path} uses store schema {found}, this fslab reads schema "
                    f"{SCHEMA_VERSION}: " + ("upgrade fslab to read it" if newer else
                    "it was written by an older fslab; export it with that version or "
                    "use a new --results directory"))
        self.db.executescript(_SCHEMA)
        self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)",
                        (str(SCHEMA_VERSION),))

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        else:
            self.db.execute("COMMIT")

    # runs ----------------------------------------------------------------
    def run_dir(self, run_id: str) -> Path:
        return self.root / "runs" / run_id

    def create_run(self, plan_text: str, environment: dict, *, name: str | None = None,
                   command: str | None = None, profile: str | None = None,
                   source: str = "fslab", status: str = "running", run_id: str | None = None) -> str:
        run_id = run_id or new_run_id()
        environment = schema.stamp("environment", environment)   # which fslab wrote the row
        with self.tx() as db:
            db.execute("INSERT INTO runs (run_id, name, plan, environment, status, started, command,"
                       " profile, source) VALUES (?,?,?,?,?,?,?,?,?)",
                       (run_id, name, plan_text, orjson.dumps(environment).decode(), status,
                        time.time(), command, profile, source))
        self.run_dir(run_id).mkdir(parents=True, exist_ok=True)
        return run_id

    def set_status(self, run_id: str, status: str) -> None:
        finished = time.time() if status != "running" else None
        with self.tx() as db:
            db.execute("UPDATE runs SET status=?, finished=? WHERE run_id=?",
                       (status, finished, run_id))

    def update_environment(self, run_id: str, patch: dict) -> None:
        """Merge `patch` into the run's environment JSON (e.g. options in effect per variant)."""
        with self.tx() as db:
            row = db.execute("SELECT environment FROM runs WHERE run_id=?", (run_id,)).fetchone()
            env = orjson.loads(row[0]) if row else {}
            _deep_merge(env, patch)
            db.execute("UPDATE runs SET environment=? WHERE run_id=?",
                       (orjson.dumps(env).decode(), run_id))

    def run(self, run_id: str) -> dict:
        row = self.db.execute("SELECT * FROM runs WHERE run_id=?", (run_id,)).fetchone()
        if row is None:
            # allow unique prefixes, like git
            rows = self.db.execute("SELECT * FROM runs WHERE run_id LIKE ?",
                                   (run_id + "%",)).fetchall()
            if len(rows) != 1:
                known = ", ".join(r["run_id"] for r in self.runs()[-5:]) or "none"
                raise FslabError(f"no run {run_id!r} in {self.path} (latest: {known})")
            row = rows[0]
        d = dict(row)
        d["environment"] = orjson.loads(d["environment"] or "{}")
        schema.check("environment", d["environment"], f"{self.path} run {d['run_id']}")
        return d

    def runs(self) -> list[dict]:
        rows = self.db.execute(
            "SELECT r.run_id, r.name, r.status, r.started, r.finished, r.profile, r.source,"
            " (SELECT COUNT(*) FROM units u WHERE u.run_id=r.run_id AND u.status='done') AS done,"
            " (SELECT COUNT(*) FROM units u WHERE u.run_id=r.run_id AND u.status='failed') AS failed,"
            " (SELECT COUNT(*) FROM records x WHERE x.run_id=r.run_id) AS records,"
            " (SELECT GROUP_CONCAT(DISTINCT x.fs) FROM records x WHERE x.run_id=r.run_id) AS fs,"
            " (SELECT GROUP_CONCAT(DISTINCT x.suite) FROM records x WHERE x.run_id=r.run_id) AS suites"
            " FROM runs r ORDER BY r.started").fetchall()
        return [dict(r) for r in rows]

    def latest_run_id(self) -> str:
        row = self.db.execute("SELECT run_id FROM runs ORDER BY started DESC LIMIT 1").fetchone()
        if row is None:
            raise FslabError(f"no runs in {self.path}")
        return row[0]

    # units + records ------------------------------------------------------
    def unit_status(self, run_id: str) -> dict[UnitKey, str]:
        rows = self.db.execute('SELECT host, fs, variant, suite, "case", params, iteration, status '
                               "FROM units WHERE run_id=?", (run_id,)).fetchall()
        return {UnitKey(*r[:7]): r[7] for r in rows}

    def finish_unit(self, run_id: str, key: UnitKey, records: Iterable[Record], status: str,
                    message: str | None, started: float, artifact_dir: str | None) -> None:
        """Atomically replace the unit's records and mark it done/failed."""
        ident = (run_id, key.host, key.fs, key.variant, key.suite, key.case, key.params, key.iteration)
        where = " AND ".join(f'"{c}"=?' for c in _UNIT_COLS)
        with self.tx() as db:
            db.execute(f"DELETE FROM units WHERE {where}", ident)
            # a unit's records may refine case/params; they are tied to the unit by artifact dir
            if artifact_dir:
                db.execute("DELETE FROM records WHERE run_id=? AND (artifact=? OR artifact LIKE ?)",
                           (run_id, artifact_dir, artifact_dir + "/%"))
            db.executemany(f"INSERT INTO records ({_COLS}) VALUES ({','.join('?' * len(RECORD_COLUMNS))})",
                           [r.as_row() for r in records])
            db.execute("INSERT INTO units VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                       (*ident, status, message, started, time.time(), artifact_dir))

    def add_records(self, records: Iterable[Record]) -> int:
        return self.add_rows(r.as_row() for r in records)

    def add_rows(self, rows: Iterable[tuple]) -> int:
        """Insert tuples already in RECORD_COLUMNS order (bulk import, no Record objects)."""
        rows = list(rows)
        with self.tx() as db:
            db.executemany(f"INSERT INTO records ({_COLS}) VALUES ({','.join('?' * len(RECORD_COLUMNS))})",
                           rows)
        return len(rows)

    def units(self, run_id: str) -> list[dict]:
        return [dict(r) for r in self.db.execute(
            "SELECT * FROM units WHERE run_id=? ORDER BY started", (run_id,)).fetchall()]

    def records(self, run_ids: list[str] | str | None = None) -> pd.DataFrame:
        """All records (of the given runs) as a pandas DataFrame with RECORD_COLUMNS, in
        insertion order. Large reads are split in two halves read side by side, one by a
        forked child: building Python objects for every cell is what a read costs."""
        import pandas as pd
        # here, not at the top: this module loads at start-up; keeps `fslab --help` fast
        from fslab.system import forked
        if isinstance(run_ids, str):
            run_ids = [run_ids]
        where, args = "", []
        if run_ids:
            where = f"run_id IN ({','.join('?' * len(run_ids))})"
            args = list(run_ids)
        count = self.db.execute(f"SELECT COUNT(*) FROM records {'WHERE ' + where if where else ''}",
                                args).fetchone()[0]
        if not forked.worth_it("store read", count):
            return _read_records(self.db, where, args)
        mid = self.db.execute(f"SELECT rowid FROM records {'WHERE ' + where if where else ''} "
                              "ORDER BY rowid LIMIT 1 OFFSET ?", [*args, count // 2]).fetchone()[0]
        join = f"{where} AND " if where else ""
        later = forked.start(_read_records, self.path, f"{join}rowid >= ?", [*args, mid])
        first = _read_records(self.db, f"{join}rowid < ?", [*args, mid])
        return pd.concat([first, later()], ignore_index=True)



def _read_records(db: sqlite3.Connection | Path, where: str, args: list[Any]) -> pd.DataFrame:
    """SELECT the records matching `where` (a connection, or a database path to open)."""
    import pandas as pd
    own = not isinstance(db, sqlite3.Connection)
    conn = db if isinstance(db, sqlite3.Connection) else sqlite3.connect(db, timeout=30)
    try:                                                    # (a forked child opens its own)
        cursor = conn.cursor()
        cursor.row_factory = None        # plain tuples: a third of the cost of sqlite3.Row
        q = f"SELECT {_COLS} FROM records {'WHERE ' + where if where else ''} ORDER BY rowid"
        rows = cursor.execute(q, args).fetchall()
    finally:
        if own:
            conn.close()
    return pd.DataFrame(rows, columns=list(RECORD_COLUMNS))   # as pd.read_sql_query types it


def open_store(results: str | Path | None) -> Store:
    return Store(results or os.environ.get("FSLAB_RESULTS") or "fslab-results")


def _deep_merge(dst: dict, src: dict) -> None:
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            _deep_merge(dst[k], v)
        else:
            dst[k] = v
