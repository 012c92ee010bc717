"""Study S1's large-file creation: 2 files of 1 GiB, written sequentially.

As vdbench does it: one writer thread per file (its 4 threads had 2 files to work
on, and vdbench writes a file with one thread unless told to share it), at its
default file-system transfer size (128 KiB since vdbench 5.03), front to back, with
incompressible, never-repeating data (ZFS dedup or compression cannot shortcut it);
then each file is fsynced. The total time runs from the first write to the last
fsync, so the time includes getting the data to the device at any page-cache
policy; the devices' own counters over it (device_write_bytes, write_amplification)
show that it did. The space the files took is read after a commit (remount / pool export),
so the write rate is reported both logical (bytes written / time) and physical
(space consumed / time: the study's numbers). Files shrink with the profile.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from fslab.system.measure import step_usage
from fslab.plan.profiles import GiB, MiB, Profile
from fslab.records import Measurement
from fslab.workloads.support.devices import DeviceAccount
from fslab.workloads.support.data import Payload, dataset_seed
from fslab.workloads.base import Case, CacheUse, Suite, UnitContext, register
from fslab.workloads.capacity import settled_capacity, space_measurements

S1_FILES, S1_FILE_BYTES = 2, 1 * GiB
WRITE_BYTES = 128 * 1024      # vdbench's default xfersize for file system workloads


@register
class LargeFileSuite(Suite):
    name = "largefile"
    study = "S1"
    needs_files = "writes files: needs a filesystem"
    description = ("S1 large files: 2 x 1 GiB, one writer per file, 128 KiB writes; total time, "
                   "logical and physical write rate, space after")

    def cases(self, spec, profile: Profile) -> list[Case]:
        size = profile.file_size(S1_FILE_BYTES)
        size -= size % WRITE_BYTES               # whole writes
        return [Case("largefile", {"files": S1_FILES, "file_bytes": size, "threads": S1_FILES,
                                   "transfer_bytes": WRITE_BYTES},
                     config=size, image_bytes=int(S1_FILES * size * 1.3) + 256 * MiB)]

    def cache_policy(self, page_cache: str) -> CacheUse:
        return CacheUse("buffered writes, each file fsynced inside the timing: the time "
                        "includes the device at every policy", buffered=False)

    def measure(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        size: int = case.config
        payload = Payload(dataset_seed(ctx.plan_seed, "largefile", ctx.key.iteration))
        ctx.note_cache_policy(self)
        with self.mounted(ctx, case) as (path, inst):
            before = settled_capacity(inst, path) if inst is not None else None
            fds = [os.open(path / f"large-{i}.dat", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                   for i in range(S1_FILES)]
            acct = DeviceAccount(inst.devices if inst is not None else [])
            try:
                with step_usage() as u:
                    with ThreadPoolExecutor(S1_FILES) as pool:   # one writer per file
                        list(pool.map(lambda f: payload.fill(fds[f], f, 0, size, WRITE_BYTES),
                                      range(S1_FILES)))
                    for fd in fds:
                        os.fsync(fd)
            finally:
                for fd in fds:
                    os.close(fd)
            written = acct.measurements(wrote=S1_FILES * size)
            # what the files took once committed (ALLOC / CAP / DEDUP on ZFS too)
            after = settled_capacity(inst, path, commit=True) if inst is not None else None
        total = S1_FILES * size
        m = self.metrics.measure
        ms = [m("total_time", u.elapsed_s),
              m("write_throughput", total / u.elapsed_s),
              m("cpu_busy_system_wide", u.cpu_system_wide), *written]
        if before is not None:
            space = space_measurements(before, after, total)
            consumed = next(m.value for m in space if m.metric == "space_consumed")
            ms += space + [m("write_throughput_physical", consumed / u.elapsed_s)]
            if "pool_size_bytes" in after:
                ms.append(m("zpool_capacity_pct",
                            100.0 * after["pool_alloc_bytes"] / after["pool_size_bytes"]))
        return ms
