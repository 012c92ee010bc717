"""The metrics of the application suites (fslab/workloads/apps/): declared here, in their
own block, and added to the catalogue by declared.py (SUITES)."""
from __future__ import annotations

from fslab.metrics.model import Metric

CPU_BUSY = Metric("cpu_busy_system_wide", "%", label="system-wide CPU busy %")


def _accounting(operation: str) -> tuple[Metric, ...]:
    """What the measured phase cost (fslab/workloads/apps/accounting.py), `operation`
    naming what the program counts (a transaction, an operation)."""
    return (
        CPU_BUSY,
        Metric("cpu_seconds", "s", label="system-wide CPU seconds"),
        # beside cpu_busy_system_wide: a saturated machine (fslab/report/cpubound.py)
        Metric("load_per_cpu", "ratio", label="1-minute load average per CPU at the end"),
        Metric("client_cpu_seconds", "s", label="the benchmark client's CPU seconds"),
        Metric("server_cpu_seconds", "s", label="the server's CPU seconds"),
        Metric("daemon_cpu_seconds", "s", label="FUSE daemon's CPU seconds"),
        Metric("device_read_bytes", "B"),
        Metric("device_write_bytes", "B"),
        Metric("device_ios", "count"),
        # what one unit of the program's work cost the device (journal, WAL, CoW included)
        Metric(f"device_write_bytes_per_{operation}", "B", "lower",
               label=f"device bytes written per {operation}",
               floor=1.0),       # under a byte per commit: background writes, not the work's
        Metric(f"{operation}s_per_cpu_second", f"{operation}s/CPU-s", "higher",
               label=f"{operation}s per system-wide CPU-second"),
    )


PGBENCH: tuple[Metric, ...] = (
    # the question: transactions per second, with the p99 latency beside it in the answer
    Metric("tps", "tx/s", "higher", label="transactions per second", quantity="tps",
           answer_rank=7, answer_with="latency_p99"),
    Metric("latency_p99", "s", "lower", label="p99 transaction latency",
           quantity="transaction latency p99"),
    Metric("latency_mean", "s", "lower", label="mean transaction latency",
           quantity="transaction latency mean"),
    Metric("latency_p50", "s", "lower", "detail", label="median transaction latency"),
    Metric("latency_max", "s", "lower", "detail", label="max transaction latency"),
    Metric("transactions", "count", label="transactions done"),
    Metric("failed_transactions", "count", "lower"),
    Metric("init_seconds", "s", label="pgbench -i time (load, vacuum, keys)"),
    Metric("database_bytes", "B", label="database size after pgbench -i"),
    *_accounting("transaction"),
)

SQLITE: tuple[Metric, ...] = (
    Metric("tps", "tx/s", "higher", label="transactions per second", quantity="tps",
           answer_rank=7),
    Metric("transactions", "count", label="transactions done"),
    Metric("elapsed", "s", label="time of the timed phase"),
    Metric("load_seconds", "s", label="time to load the table (untimed phase)"),
    Metric("database_bytes", "B", label="database size at the end"),
    *_accounting("transaction"),
)

DBENCH: tuple[Metric, ...] = (
    Metric("throughput", "B/s", "higher", label="dbench throughput", quantity="throughput",
           answer_rank=7, answer_with="max_latency"),
    Metric("max_latency", "s", "lower", label="dbench max latency"),
    Metric("operations", "count", label="dbench operations done"),
    *_accounting("operation"),
)

ROCKSDB: tuple[Metric, ...] = (
    Metric("ops", "ops/s", "higher", label="db_bench operations per second", quantity="ops",
           answer_rank=7, answer_with="latency_p99"),
    Metric("latency_p99", "s", "lower", label="p99 operation latency",
           quantity="operation latency p99"),
    Metric("latency_p50", "s", "lower", "detail", label="median operation latency"),
    Metric("latency_mean", "s", "lower", label="mean operation latency"),
    Metric("latency_max", "s", "lower", "detail", label="max operation latency"),
    Metric("operations", "count", label="db_bench operations done"),
    *_accounting("operation"),
)

APP_SUITES: dict[str, tuple[Metric, ...]] = {
    "pgbench": PGBENCH, "sqlite": SQLITE, "dbench": DBENCH, "rocksdb": ROCKSDB,
}
