"""The bare block device, no filesystem: S0's Test 3 and the baseline of "efficiency vs raw".

fio addresses the device itself (`filename=/dev/loopN`, see workloads/fio.py).
There is no mkfs; instead the device is written once, end to end, with random
data: reads of a never-written loop image would return zeros from the sparse
file's holes without touching the disk, while reads on a filesystem hit the
file fio laid out. Nothing is mounted for real either: the unit's mount point
gets a tiny read-only tmpfs, so a suite that expects files fails at once
instead of writing to the host disk underneath.
"""
from __future__ import annotations

import os

from fslab.filesystems import register
from fslab.filesystems.base import Availability, Driver, Instance, drop_caches
from fslab.system.proc import first_line, is_root, run, which


@register
class Raw(Driver):
    name = "raw"
    fstype = "none"
    holds_files = False
    probe_options = False   # filling the device is its "mkfs": nothing to try on a scratch image
    packages = ["fio"]

    def available(self) -> Availability:
        if not is_root():
            return Availability(False, why="needs root to open block devices", packages=self.packages)
        if not which("fio"):
            return Availability(False, why="fio not installed (apt-get install fio)",
                                packages=self.packages)
        return Availability(True, how="block device, no filesystem")

    def versions(self) -> dict[str, str]:
        v = first_line(["fio", "--version"])
        return {"fio": v} if v else {}

    def mkfs(self, inst: Instance) -> None:
        dev = inst.devices[0]
        # fill only the part a case asked for: on a real device, not the whole disk
        size = min(inst.size_bytes, device_bytes(dev))
        run(["fio", "--name=fill", f"--filename={dev}", "--rw=write", "--bs=1M",
             "--ioengine=psync", "--direct=1", f"--size={size}", "--end_fsync=1"],
            timeout=3 * 3600)
        inst.info["filled_bytes"] = size

    def mount(self, inst: Instance) -> None:
        run(["mount", "-t", "tmpfs", "-o", "ro,size=4k,mode=0555", "fslab-raw-guard",
             str(inst.mountpoint)])

    def cold_cache(self, inst: Instance) -> dict:
        run(["blockdev", "--flushbufs", inst.devices[0]])
        drop_caches()
        return {"method": "blockdev --flushbufs + drop_caches", "mounted": True}

    def effective_options(self, inst: Instance) -> dict:
        return {"device": inst.devices[0] if inst.devices else None,
                "note": "raw block device: no filesystem, fio addresses the device directly"}

    def capacity(self, inst: Instance) -> dict:
        size = sum(device_bytes(d) for d in inst.devices)
        return {"total_bytes": size, "free_bytes": size, "avail_bytes": size, "used_bytes": 0}


def is_raw(inst: Instance | None) -> bool:
    """True when this instance is the bare device (suites then address inst.devices[0])."""
    return inst is not None and isinstance(inst.driver, Raw)


def device_bytes(path: str) -> int:
    """A block device's (or image file's) size in bytes."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.lseek(fd, 0, os.SEEK_END)
    finally:
        os.close(fd)
