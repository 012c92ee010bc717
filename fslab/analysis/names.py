"""Metric names as a person says them ("random write IOPS", "p99 read latency")."""
from __future__ import annotations

import math
import re

_DIRECTION = {"read": "read", "write": "write", "trim": "trim"}
_STAT = {"iops": "IOPS", "bw": "bandwidth", "io_bytes": "bytes moved"}
_LAT = {"clat": "completion latency", "lat": "latency", "slat": "submission latency"}
_FIXED = {
    "ops_per_cpu_second": "operations per CPU-second",
    "ops_per_cpu_percent": "operations per CPU %",
    "write_amplification": "write amplification (device ÷ fio bytes)",
    "device_read_share": "share of reads that reached the device",
    "cpu_busy_system_wide": "system-wide CPU busy %",
    "fio_rusage_cpu": "fio's own CPU seconds",
    "usr_cpu": "fio's user CPU %", "sys_cpu": "fio's system CPU %",
    "elapsed": "time", "elapsed_with_writeback": "time incl. writeback",
}


def metric_label(metric: str) -> str:
    """read_iops -> 'read IOPS', write_clat_p99 -> 'p99 write latency', else as stored."""
    if metric in _FIXED:
        return _FIXED[metric]
    m = re.fullmatch(r"(read|write|trim)_(iops|bw|io_bytes)", metric)
    if m:
        return f"{_DIRECTION[m[1]]} {_STAT[m[2]]}"
    m = re.fullmatch(r"(read|write|trim)_(clat|lat|slat)_(mean|p\d+(?:\.\d+)?|min|max|stddev)", metric)
    if m:
        stat = "mean" if m[3] == "mean" else m[3]
        kind = "latency" if m[2] in ("clat", "lat") else _LAT[m[2]]
        return f"{stat} {m[1]} {kind}"
    m = re.fullmatch(r"sync_lat_(mean|p\d+(?:\.\d+)?|min|max|stddev)", metric)
    if m:   # fio's fsync/fdatasync latency
        return f"{m[1]} sync latency (fsync/fdatasync)"
    return metric.replace("_", " ")


def ratio_text(ratio: float) -> str:
    """0.0514 -> '0.051×', 0.5 -> '0.50×', 3.21 -> '3.2×', 71.9 -> '72×'."""
    if ratio is None or not math.isfinite(ratio):
        return "n/a"
    if ratio >= 10:
        return f"{ratio:.0f}×"
    if ratio >= 1:
        return f"{ratio:.1f}×"
    if ratio >= 0.1:
        return f"{ratio:.2f}×"
    return f"{ratio:.2g}×"
