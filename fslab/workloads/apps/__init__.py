"""Real applications as workloads: PostgreSQL's pgbench, SQLite, dbench, RocksDB's db_bench.

Each suite runs the program itself on the filesystem under test, inside one unit, with a
time limit on every step; its raw output is kept with the unit. The suites register
through fslab/workloads/applications.py (workload discovery imports modules, not
packages). What each one measures and does not represent: docs/workloads.md.
"""
