"""Study S1's deduplication test: a tree of 2 MiB files, half duplicating the other half.

Setup: a tree of depth 2 and width 4 (16 leaf directories), 50 files of 2 MiB
per leaf at paper scale (800 files, 1.56 GiB), written by 4 threads; the files
in the last 8 leaves are byte copies of those in the first 8 (dedup ratio 2 if
a filesystem finds every duplicate). Content is incompressible and every 4 KiB
block of distinct files differs (fslab.workloads.support.data), so compression and
chance matches cannot inflate the ratio. Setup time runs to the end of a
syncfs: the data is on disk.

Read phase, as vdbench ran it (fileselect=random, fileio=sequential): right after
setup, with the cache as setup left it, 4 fio jobs each pick a file of the whole
tree at random and read it front to back in 4 KiB transfers, then pick another, for
30 s at paper scale. The space reading comes after it, once committed (remount /
pool export, which also empties the caches), so it cannot change what was read.

Recorded: logical bytes, space consumed (drop of space available to a user),
statvfs used, the achieved saving ratio, ZFS's zpool ALLOC and DEDUP ratio,
setup time and throughput, system-wide CPU during setup and during the read
phase, and fio's read metrics. Only the ZFS variant with dedup=on deduplicates
inline; ext4 and xfs have no dedup and btrfs only offline (duperemove), which
this study does not run, so their ratio stays at about 1.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from fslab.fio.parse import FioParseError, job_measurements, load_fio_output
from fslab.system.measure import run_timed, step_usage
from fslab.plan.profiles import MiB, Profile, parse_size
from fslab.system.proc import run
from fslab.records import Measurement
from fslab.workloads.support.data import Payload, dataset_seed
from fslab.workloads.base import Case, Suite, UnitContext, UnitFailed, register
from fslab.workloads.capacity import SPACE_IMAGE_BYTES, settled_capacity, space_measurements

WIDTH, FILES_PER_LEAF, FILE_BYTES, THREADS = 4, 50, 2 * MiB, 4
READ_SECONDS, READ_BS = 30, "4k"


def leaf_dirs() -> list[str]:
    return [f"d{a}/d{b}" for a in range(WIDTH) for b in range(WIDTH)]


def layout(per_leaf: int) -> list[tuple[str, int]]:
    """(relative path, content id) of every file; the second half repeats the first's ids."""
    leaves = leaf_dirs()
    n = len(leaves) * per_leaf
    return [(f"{leaves[k // per_leaf]}/f{k:04d}.dat", k % (n // 2)) for k in range(n)]


def read_job(root: Path, runtime: int, file_bytes: int) -> str:
    """fio: 4 jobs over the whole tree, each reading a randomly chosen file front to back
    (a file's worth of 4 KiB reads) before it picks the next at random."""
    per_file = max(1, file_bytes // parse_size(READ_BS))
    return "\n".join(["[global]", "rw=read", f"bs={READ_BS}", "ioengine=sync", "time_based=1",
                      f"runtime={runtime}", f"file_service_type=random:{per_file}",
                      f"numjobs={THREADS}", "group_reporting=1", f"opendir={root}",
                      "[readers]"]) + "\n"


@register
class DedupSuite(Suite):
    name = "dedup"
    needs_files = "writes files: needs a filesystem"
    description = "S1 dedup: 2 MiB files, half duplicates; space, dedup ratio, setup and 4-thread read"

    def cases(self, spec, profile: Profile) -> list[Case]:
        per_leaf = profile.count(FILES_PER_LEAF, minimum=2)
        size = profile.file_size(FILE_BYTES)
        logical = len(leaf_dirs()) * per_leaf * size
        runtime = int(profile.runtime(READ_SECONDS))
        return [Case("dedup", {"files": len(leaf_dirs()) * per_leaf, "file_bytes": size},
                     config=(per_leaf, size, runtime),
                     image_bytes=max(SPACE_IMAGE_BYTES, int(logical * 1.5)))]

    def run(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        per_leaf, size, runtime = case.config
        files = layout(per_leaf)
        payload = Payload(dataset_seed(ctx.plan_seed, "dedup", ctx.key.iteration))
        job_path, _ = ctx.artifact("read.fio")
        out_path, out_rel = ctx.artifact("fio.json")
        log_path, _ = ctx.artifact("fio.log")
        with self.mounted(ctx, case) as (path, inst):
            if inst is None:
                raise UnitFailed("dedup measures space through the filesystem's own capacity: "
                                 "not with --mountpoint")
            for d in leaf_dirs():
                (path / d).mkdir(parents=True)
            before = settled_capacity(inst, path)
            with step_usage() as setup:
                with ThreadPoolExecutor(THREADS) as pool:
                    list(pool.map(lambda f: payload.write(path / f[0], f[1], size), files))
                run(["sync", "-f", str(path)])
            job_path.write_text(read_job(path, runtime, size))
            read = run_timed(["fio", "--output-format=json", f"--output={out_path}", str(job_path)],
                             log_path)
            after = settled_capacity(inst, path, commit=True)
        logical = len(files) * size
        ms = space_measurements(before, after, logical)
        consumed = next(m.value for m in ms if m.metric == "space_consumed")
        ms += [Measurement("setup_time", setup.elapsed_s, "s", "lower"),
               Measurement("setup_throughput", logical / setup.elapsed_s, "B/s", "higher"),
               # the study's write rate: physical space written / time
               Measurement("setup_throughput_physical", consumed / setup.elapsed_s, "B/s", None),
               Measurement("cpu_busy_setup_system_wide", setup.cpu_system_wide, "%", None),
               Measurement("cpu_busy_read_system_wide", read.cpu_system_wide, "%", None)]
        try:
            jobs = job_measurements(load_fio_output(out_path.read_bytes(), str(out_path)))
        except (FioParseError, OSError) as e:
            raise UnitFailed(f"read phase: {e}", ms) from None
        for job in jobs:
            for m in job.measurements:
                m.artifact = out_rel
            ms += job.measurements
        return ms
