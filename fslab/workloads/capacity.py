"""Partition capacity (study S3): blocks available to a user / blocks of the whole partition.

The denominator is the partition's raw size (the block devices' own size), not
the filesystem's total, so journal, inode tables and reserved blocks all count
as lost. The suite measures it right after mkfs, on S3's 20 GB partition at
every profile: the image is sparse and nothing is written, so it takes seconds.
The tasks suite reuses the helpers for its initial and residual capacity.
"""
from __future__ import annotations

import time
from pathlib import Path

from fslab.filesystems.base import Instance
from fslab.filesystems.raw import device_bytes
from fslab.proc import run
from fslab.profiles import Profile
from fslab.records import Measurement
from fslab.workloads.base import Case, Suite, UnitContext, register

S3_PARTITION_BYTES = 20 * 10**9


def raw_bytes(inst: Instance) -> int:
    return sum(device_bytes(d) for d in inst.devices)


def settled_capacity(inst: Instance, path: Path, timeout: float = 20.0) -> dict:
    """The driver's capacity() once the filesystem has committed its last change.

    Frees and allocations become visible late on some filesystems (btrfs
    transaction commit, ZFS txg sync, background frees): flush this filesystem,
    then poll until two readings a second apart agree.
    """
    run(["sync", "-f", str(path)], check=False)
    last = inst.driver.capacity(inst)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = inst.driver.capacity(inst)
        if now == last:
            return now
        last = now
    return last


def capacity_share(inst: Instance, path: Path) -> tuple[float, dict]:
    """(% of the raw partition available to a user, the capacity reading it came from)."""
    cap = settled_capacity(inst, path)
    return 100.0 * cap["avail_bytes"] / raw_bytes(inst), cap


@register
class CapacitySuite(Suite):
    name = "capacity"
    description = "S3 partition capacity after mkfs: available blocks / raw partition blocks"

    def cases(self, spec, profile: Profile) -> list[Case]:
        return [Case("capacity", {"partition_bytes": S3_PARTITION_BYTES},
                     image_bytes=S3_PARTITION_BYTES)]

    def supports(self, fs_name: str) -> str | None:
        return "has no filesystem to measure" if fs_name == "raw" else None

    def run(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        with self.mounted(ctx, case) as (path, inst):
            if inst is None:
                raise_no_device("capacity")
            share, cap = capacity_share(inst, path)
            raw = raw_bytes(inst)
        return [Measurement("capacity_initial", share, "%", "higher"),
                Measurement("available_bytes", cap["avail_bytes"], "B", "higher"),
                # the filesystem's own idea of its size, for reference next to the raw size
                Measurement("fs_total_of_raw", 100.0 * cap["total_bytes"] / raw, "%", None)]


def raise_no_device(suite: str):
    from fslab.workloads.base import UnitFailed
    raise UnitFailed(f"{suite} needs fslab to make the filesystem; an existing --mountpoint "
                     "has no raw partition size to compare with")
