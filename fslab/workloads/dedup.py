"""Study S1's deduplication test: a tree of 2 MiB files, half duplicating the other half.

Setup: a tree of depth 2 and width 4 (16 leaf directories), 50 files of 2 MiB
per leaf at paper scale (800 files, 1.56 GiB), written by 4 threads; the files
in the last 8 leaves are byte copies of those in the first 8 (dedup ratio 2 if
a filesystem finds every duplicate). Content is incompressible and every 4 KiB
block of distinct files differs (fslab.workloads.support.data), so compression and
chance matches cannot inflate the ratio. Setup time runs to the end of a
syncfs: the data is on disk.

Read phase, as vdbench ran it (fileselect=random, fileio=sequential): right after
setup, 4 fio jobs each pick a file of the whole tree at random and read it front
to back in 4 KiB transfers, then pick another, for 30 s at paper scale. With the
page cache on (paper) it reads with the cache as setup left it, as vdbench did
(fio's invalidate=0: fio would otherwise drop each file's pages as it opens it),
so its reads may come from memory; with it off the caches are emptied first
(remount / pool export) and fio reads with O_DIRECT where the filesystem takes it
(fslab/fio/cachepolicy.py). Device counters around the read (device_read_share)
say which it was. The space reading comes after it, once committed (remount /
pool export), so it cannot change what was read.

Space is read first on the fresh filesystem, before any directory exists, as the
study's `df` Used covered the whole tree: directories and metadata count.
Recorded: logical bytes, space consumed (drop of space available to a user),
statvfs used, the achieved saving ratio, ZFS's zpool ALLOC and DEDUP ratio,
`df_used` (statvfs used after the tree, what the study's `df` printed) and
`df_used_overhead_pct` (df_used over the logical bytes: the study's +140 MB),
setup time and throughput, the bytes setup wrote to the devices, system-wide CPU
during setup and during the read phase, and fio's read metrics. Only the ZFS variant with dedup=on deduplicates
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
from fslab.fio import cachepolicy
from fslab.fio.accounting import UnitAccount
from fslab.workloads.support.devices import DeviceAccount
from fslab.workloads.support.data import Payload, dataset_seed
from fslab.workloads.base import Case, CacheUse, Suite, UnitContext, UnitFailed, register
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


def read_options(root: Path, runtime: int, file_bytes: int) -> dict[str, str]:
    """fio: 4 jobs over the whole tree, each reading a randomly chosen file front to back
    (a file's worth of 4 KiB reads) before it picks the next at random."""
    per_file = max(1, file_bytes // parse_size(READ_BS))
    return {"rw": "read", "bs": READ_BS, "ioengine": "sync", "time_based": "1",
            "runtime": str(runtime), "file_service_type": f"random:{per_file}",
            "numjobs": str(THREADS), "group_reporting": "1", "opendir": str(root)}


def job_text(options: dict[str, str]) -> str:
    return "\n".join(["[global]", *(f"{k}={v}" for k, v in options.items()), "[readers]"]) + "\n"


@register
class DedupSuite(Suite):
    name = "dedup"
    study = "S1"
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

    def cache_policy(self, page_cache: str) -> CacheUse:
        setup = ("setup through the page cache, timed to the end of a syncfs (the device, "
                 "where the filesystem honours syncfs: setup_device_write_bytes shows it)")
        if page_cache == "on":
            return CacheUse(f"{setup}; the read phase reads with the cache as setup left it "
                            "(fio invalidate=0), as vdbench did: its reads may come from memory "
                            "(device_read_share says how much)", buffered=True)
        return CacheUse(f"{setup}; caches emptied before the read phase (remount / pool "
                        "export), which reads with O_DIRECT where the filesystem takes it",
                        buffered=False)

    def measure(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        per_leaf, size, runtime = case.config
        files = layout(per_leaf)
        payload = Payload(dataset_seed(ctx.plan_seed, "dedup", ctx.key.iteration))
        job_path, _ = ctx.artifact("read.fio")
        out_path, out_rel = ctx.artifact("fio.json")
        log_path, _ = ctx.artifact("fio.log")
        ctx.note_cache_policy(self)
        with self.mounted(ctx, case) as (path, inst):
            if inst is None:
                raise UnitFailed("dedup measures space through the filesystem's own capacity: "
                                 "not with --mountpoint")
            # the fresh filesystem: the study's df Used covered the directories too
            before = settled_capacity(inst, path)
            for d in leaf_dirs():
                (path / d).mkdir(parents=True)
            setup_dev = DeviceAccount(inst.devices)
            with step_usage() as setup:
                with ThreadPoolExecutor(THREADS) as pool:
                    list(pool.map(lambda f: payload.write(path / f[0], f[1], size), files))
                run(["sync", "-f", str(path)])
            # dedup writes less than it is given by design: bytes, not a share
            setup_ms = setup_dev.measurements(prefix="setup_")
            options = cachepolicy.apply(ctx.page_cache, read_options(path, runtime, size),
                                        str(path), None, inst.driver, inst)
            if ctx.page_cache == "off":
                inst.cold_cache()      # not the cache setup left: the device
            else:                      # vdbench drops nothing; fio would, file by file
                options.options["invalidate"] = "0"
            ctx.note_workload(read_phase={ctx.spec.label: options.description})
            job_path.write_text(job_text(options.options))
            daemon = inst.driver.serving_daemon()
            acct = UnitAccount.start(inst.devices, daemon[1] if daemon else None)
            read = run_timed(["fio", "--output-format=json", f"--output={out_path}", str(job_path)],
                             log_path)
            acct.stop()
            after = settled_capacity(inst, path, commit=True)
        logical = len(files) * size
        ms = space_measurements(before, after, logical) + setup_ms
        consumed = next(m.value for m in ms if m.metric == "space_consumed")
        # the study's reading: df's Used once the tree is written, over the data
        emit = self.metrics.measure
        ms += [emit("df_used", after["used_bytes"]),
               emit("df_used_overhead_pct", 100.0 * (after["used_bytes"] - logical) / logical),
               emit("setup_time", setup.elapsed_s),
               emit("setup_throughput", logical / setup.elapsed_s),
               # the study's write rate: physical space written / time
               emit("setup_throughput_physical", consumed / setup.elapsed_s),
               emit("cpu_busy_setup_system_wide", setup.cpu_system_wide),
               emit("cpu_busy_read_system_wide", read.cpu_system_wide)]
        try:
            doc = load_fio_output(out_path.read_bytes(), str(out_path))
            jobs = job_measurements(doc)
        except (FioParseError, OSError) as e:
            raise UnitFailed(f"read phase: {e}", ms) from None
        for job in jobs:
            for m in job.measurements:
                m.artifact = out_rel
            ms += job.measurements
        # what reached the devices during the read (device_read_share: memory or the disk)
        return ms + acct.measurements(doc, read.elapsed_s, out_rel)
