"""SQLite inserts, each its own transaction with a full fsync (the replay example of a
database's small synchronous writes: journal created, written, synced, removed)."""
import sqlite3

db = sqlite3.connect("test.db", isolation_level=None)
db.execute("PRAGMA synchronous=FULL")
db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
for i in range(40):
    db.execute("BEGIN")
    db.execute("INSERT INTO t (v) VALUES (?)", ("x" * 200,))
    db.execute("COMMIT")
db.close()
