"""The SQLite workload, run as its own process: `python sqlite_load.py load|run DB JOURNAL
ROWS SECONDS SEED` prints one JSON line. Standard library only (it runs by path, without
fslab). Two processes, so that the caller can count the timed phase's CPU and device bytes
alone.

load: a table of ROWS rows (an integer key, an indexed text key, a 100-byte
value, a counter) inserted 1,000 rows per transaction. Then, for SECONDS: transactions
of 10 inserts, 10 lookups through the index and 1 update through it, each committed
(BEGIN ... COMMIT) with journal_mode JOURNAL and synchronous = FULL: every commit waits
for its journal (DELETE: the rollback journal and the database; WAL: the write-ahead log)
to reach the disk.
"""
import json
import os
import random
import sqlite3
import sys
import time

INSERTS, LOOKUPS, UPDATES = 10, 10, 1
LOAD_BATCH = 1000


def key(i: int) -> str:
    return f"k{i * 2654435761 % 4294967296:010d}"   # spread over the index, not in order


def connect(db: str, journal: str) -> tuple[sqlite3.Connection, str]:
    con = sqlite3.connect(db, isolation_level=None)
    mode = con.execute(f"PRAGMA journal_mode={journal}").fetchone()[0]
    con.execute("PRAGMA synchronous=FULL")
    return con, mode


def load(db: str, journal: str, rows: int, seed: int) -> dict:
    rnd = random.Random(seed)
    con, mode = connect(db, journal)
    con.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, k TEXT NOT NULL, v BLOB, n INTEGER)")
    con.execute("CREATE INDEX items_k ON items (k)")
    t0 = time.perf_counter()
    for start in range(0, rows, LOAD_BATCH):
        con.execute("BEGIN")
        con.executemany("INSERT INTO items (id, k, v, n) VALUES (?, ?, ?, 0)",
                        ((i, key(i), rnd.randbytes(100)) for i in range(start, min(rows, start + LOAD_BATCH))))
        con.execute("COMMIT")
    load_s = time.perf_counter() - t0
    con.close()
    return {"journal_mode": mode, "rows_loaded": rows, "load_seconds": load_s}


def run(db: str, journal: str, rows: int, seconds: float, seed: int) -> dict:
    rnd = random.Random(seed + 1)
    con, mode = connect(db, journal)
    next_id, done, found = rows, 0, 0
    t0 = time.perf_counter()
    end = t0 + seconds
    while time.perf_counter() < end:
        con.execute("BEGIN")
        con.executemany("INSERT INTO items (id, k, v, n) VALUES (?, ?, ?, 0)",
                        ((i, key(i), rnd.randbytes(100)) for i in range(next_id, next_id + INSERTS)))
        next_id += INSERTS
        for _ in range(LOOKUPS):
            found += con.execute("SELECT count(*) FROM items WHERE k = ?",
                                 (key(rnd.randrange(next_id)),)).fetchone()[0]
        con.execute("UPDATE items SET n = n + 1 WHERE k = ?", (key(rnd.randrange(next_id)),))
        con.execute("COMMIT")
        done += 1
    elapsed = time.perf_counter() - t0
    con.close()
    return {"journal_mode": mode, "synchronous": "FULL", "sqlite_version": sqlite3.sqlite_version,
            "transactions": done,
            "elapsed_seconds": elapsed, "lookups_found": found,
            "database_bytes": os.path.getsize(db)}


if __name__ == "__main__":
    phase, db, journal, rows, seconds, seed = sys.argv[1:7]
    print(json.dumps(load(db, journal, int(rows), int(seed)) if phase == "load"
                     else run(db, journal, int(rows), float(seconds), int(seed))))
