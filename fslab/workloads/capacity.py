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
from fslab.metrics import Catalogue
from fslab.metrics.declared import SPACE
from fslab.filesystems.raw import device_bytes
from fslab.system.proc import run
from fslab.plan.profiles import Profile
from fslab.records import Measurement
from fslab.workloads.base import Case, Suite, UnitContext, register, UnitFailed

S3_PARTITION_BYTES = 20 * 10**9
# Suites that measure space use S3's partition size at every profile: mkfs picks other
# defaults for small devices (ext4: 1 KiB blocks below 512 MiB), and a sparse image is free.
SPACE_IMAGE_BYTES = S3_PARTITION_BYTES


def raw_bytes(inst: Instance) -> int:
    return sum(device_bytes(d) for d in inst.devices)


def settled_capacity(inst: Instance, path: Path, commit: bool = False,
                     timeout: float = 20.0) -> dict:
    """The driver's capacity() once the filesystem has accounted for its last change.

    commit=True first unmounts and remounts (the driver's cold_cache: zpool
    export/import for ZFS), the one barrier every filesystem honours: zfs-fuse
    has no `zpool sync` and ignores syncfs, so without it the space of recent
    writes shows up whenever the next txg commits. Frees can land later still
    (btrfs cleaner, ZFS async destroy): poll until two readings a second apart agree.
    """
    if commit:
        inst.cold_cache()
    else:
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


def capacity_share(inst: Instance, path: Path, commit: bool = False) -> tuple[float, dict]:
    """(% of the raw partition available to a user, the capacity reading it came from)."""
    cap = settled_capacity(inst, path, commit)
    return 100.0 * cap["avail_bytes"] / raw_bytes(inst), cap


# the space a write cost, as the catalogue declares it for every suite that records it
SPACE_METRICS = Catalogue(SPACE)


def space_measurements(before: dict, after: dict, logical_bytes: int) -> list[Measurement]:
    """What writing `logical_bytes` cost in space, from capacity readings before and after.

    `space_consumed` is the drop in space available to a user: it counts
    metadata and, on ZFS, shows dedup savings, which statvfs's `used` (the
    dataset's logical use) does not. For ZFS the pool's ALLOC and DEDUP ratio
    are recorded as well.
    """
    consumed = before["avail_bytes"] - after["avail_bytes"]
    m = SPACE_METRICS.measure
    ms = [m("logical_bytes", logical_bytes),
          m("space_consumed", consumed),
          m("statvfs_used", after["used_bytes"] - before["used_bytes"]),
          m("space_overhead", consumed - logical_bytes),
          m("space_overhead_pct", 100.0 * (consumed - logical_bytes) / logical_bytes),
          m("space_saving_ratio", logical_bytes / consumed if consumed > 0 else 0.0)]
    if "pool_alloc_bytes" in after:
        ms += [m("zpool_alloc", after["pool_alloc_bytes"] - before["pool_alloc_bytes"]),
               m("zpool_dedupratio", after["dedupratio"])]
    return ms


@register
class CapacitySuite(Suite):
    name = "capacity"
    study = "S3"
    needs_files = "has no filesystem to measure"
    description = "S3 partition capacity after mkfs: available blocks / raw partition blocks"

    def cases(self, spec, profile: Profile) -> list[Case]:
        return [Case("capacity", {"partition_bytes": S3_PARTITION_BYTES},
                     image_bytes=S3_PARTITION_BYTES)]

    def measure(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        with self.mounted(ctx, case) as (path, inst):
            if inst is None:
                raise_no_device("capacity")
            share, cap = capacity_share(inst, path)
            raw = raw_bytes(inst)
        return [self.metrics.measure("capacity_initial", share),
                self.metrics.measure("available_bytes", cap["avail_bytes"]),
                # the filesystem's own idea of its size, for reference next to the raw size
                self.metrics.measure("fs_total_of_raw", 100.0 * cap["total_bytes"] / raw)]


def raise_no_device(suite: str):
    raise UnitFailed(f"{suite} needs fslab to make the filesystem; an existing --mountpoint "
                     "has no raw partition size to compare with")
