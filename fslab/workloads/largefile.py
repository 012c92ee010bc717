"""Study S1's large-file creation: 2 files of 1 GiB, written sequentially by 4 threads.

vdbench gave each of its 4 threads a sequential stream; here each file is split
in two halves and every thread writes one half front to back (1 MiB writes of
incompressible, never-repeating data, so ZFS dedup or compression cannot
shortcut it), then each file is fsynced. The total time runs from the first
write to the last fsync. Files shrink with the profile (1 GiB at paper).
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from fslab.measure import step_usage
from fslab.profiles import GiB, MiB, Profile
from fslab.records import Measurement
from fslab.workloads._data import Payload, dataset_seed
from fslab.workloads.base import Case, Suite, UnitContext, register

S1_FILES, S1_FILE_BYTES, S1_THREADS = 2, 1 * GiB, 4
WRITE_BYTES = 1 * MiB


@register
class LargeFileSuite(Suite):
    name = "largefile"
    description = "S1 large files: 2 x 1 GiB written sequentially by 4 threads; total time, throughput"

    def cases(self, spec, profile: Profile) -> list[Case]:
        size = profile.file_size(S1_FILE_BYTES)
        size -= size % (WRITE_BYTES * 2)       # halves of whole writes
        return [Case("largefile", {"files": S1_FILES, "file_bytes": size, "threads": S1_THREADS},
                     config=size, image_bytes=int(S1_FILES * size * 1.3) + 256 * MiB)]

    def supports(self, fs_name: str) -> str | None:
        return "writes files: needs a filesystem" if fs_name == "raw" else None

    def run(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        size: int = case.config
        payload = Payload(dataset_seed(ctx.plan_seed, "largefile", ctx.key.iteration))
        with self.mounted(ctx, case) as (path, inst):
            fds = [os.open(path / f"large-{i}.dat", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                   for i in range(S1_FILES)]
            half = size // 2
            # (file index, offset) of each thread's stream: two per file
            streams = [(f, h * half) for f in range(S1_FILES) for h in range(2)]
            try:
                with step_usage() as u:
                    with ThreadPoolExecutor(S1_THREADS) as pool:
                        list(pool.map(lambda s: payload.fill(fds[s[0]], s[0], s[1], half, WRITE_BYTES), streams))
                    for fd in fds:
                        os.fsync(fd)
            finally:
                for fd in fds:
                    os.close(fd)
        total = S1_FILES * size
        return [Measurement("total_time", u.elapsed_s, "s", "lower"),
                Measurement("write_throughput", total / u.elapsed_s, "B/s", "higher"),
                Measurement("cpu_busy_system_wide", u.cpu_system_wide, "%", None)]
