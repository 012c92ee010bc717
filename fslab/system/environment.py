"""What the machine was when the numbers were taken: kernel, CPU, memory, tools, devices."""
from __future__ import annotations

import os
import platform
import socket
import sys
from pathlib import Path

from fslab import __version__
from fslab.system.proc import first_line, is_root


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _meminfo() -> dict[str, int]:
    out = {}
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            k, v = line.split(":", 1)
            if k in ("MemTotal", "MemAvailable", "SwapTotal"):
                out[k] = int(v.split()[0]) * 1024
    except OSError:
        pass
    return out


def _os_release() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return "unknown"


def tool_versions(fs_tools: dict[str, str] | None = None) -> dict[str, str]:
    """fio's version, then the filesystems' own tools (fslab.filesystems.tool_versions)."""
    out = {}
    fio = first_line(["fio", "--version"])
    if fio:
        out["fio"] = fio
    out.update(fs_tools or {})
    return out


def capture(fs_tools: dict[str, str] | None = None, target: dict | None = None) -> dict:
    """The host a run ran on; `fs_tools` are its filesystems' tools, asked of their drivers
    by the caller (fslab.filesystems.tool_versions: the drivers sit above this floor)."""
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "os": _os_release(),
        "arch": platform.machine(),
        "cpu_model": _cpu_model(),
        "cpus": os.cpu_count(),
        "memory": _meminfo(),
        "python": sys.version.split()[0],
        "fslab": __version__,
        "root": is_root(),
        "tools": tool_versions(fs_tools),
        "target": target or {},
        "clocksource": _read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        "virtualization": first_line(["systemd-detect-virt"]) or "unknown",
        "load": load_now(),
    }


def load_now() -> dict:
    """How busy the machine is with other work as fslab starts (fslab itself is idle then):
    load averages and CPU pressure (PSI: the share of time some task waited for a CPU).
    `fslab compare` warns when a run started on a busy host."""
    out: dict = {}
    text = _read("/proc/loadavg")
    if text:
        out["loadavg"] = [float(x) for x in text.split()[:3]]
    pressure = _read("/proc/pressure/cpu")   # absent without CONFIG_PSI or psi=0
    for line in (pressure or "").splitlines():
        kind, *fields = line.split()
        if kind == "some":
            values = dict(f.split("=", 1) for f in fields)
            out["cpu_pressure_some"] = {k: float(values[k]) for k in ("avg10", "avg60")
                                        if k in values}
    return out


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None
