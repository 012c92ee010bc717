"""Study S3's file-server task sequence, each task timed like GNU time.

One unit runs the whole sequence on a fresh filesystem; the plan's iterations
repeat it (3 at paper scale). Records carry the task as their case
("03-copy-iso"), so analysis compares filesystems task by task:

  01-mkfs  02-mount  03-copy-iso (from the other disk)  04-recopy-iso (within)
  05-remove-isos  06-copy-tree (from the other disk)  07-recopy-tree (within)
  09-ls-R (to a file on the test disk)  10-find (a wildcard)  08-remove-trees  11-umount

ls -R and find walk one copy of the tree (the study's "operations into the file
tree"), not both copies.

The numbers are the study's. fslab lists and searches the trees before removing
them (9 and 10 before 8): listing an empty disk would measure nothing.

Per task: elapsed, CPU % ((user+sys)/elapsed), user and system time, major and
minor page faults of the task's processes (fslab.system.measure), system-wide CPU, and
the time a `sync -f` takes right after it ("writeback"): what the command left
dirty would otherwise be paid by the next task. A copy (03, 04, 06, 07) is timed until
its data is on the device: the copy and a `sync -f` together. The study's machine had
512 MB of RAM, so its 700 MB and 1.9 GB copies were bound by the disk; on a host with
gigabytes of RAM they fit under the dirty limits, and the copy alone would time a
memory copy (a deviation from the study's GNU time of `cp` alone, declared in
docs/studies.md). Its writeback after is then about 0. Capacity (available / raw
partition) is taken after mount (initial) and, on a fresh mount after 11, once
all files are gone (residual).

What reached the test disk is counted per task (fslab/system/devstat.py): for a copy
over its timed region, for the other tasks over the task and its writeback:
device_read_bytes, device_write_bytes, device_ios and,
for the copies, write_amplification (device bytes written in the timed region / bytes
copied: about 1 when the time covered the disk) and writeback_device_write_bytes (what
the writeback after it still wrote: about 0) and, for
the recopies, device_read_share (device bytes read / bytes copied; the source of
03 and 06 is the other disk). They show what a time measured: a recopy that wrote
a fraction of the file cloned it or left it in memory; one whose reads never
reached the device read the page cache, as the study's buffered `cp` could.

Copies are `cp -a --reflink=never`: since coreutils 9, plain `cp` clones shared
extents where the filesystem can (XFS, Btrfs), and the study's copies copied data.
mkfs writes inode tables and journal itself (ext2/3/4: -E lazy_itable_init=0,
lazy_journal_init=0, as every mke2fs of 2006 did), so the timed mkfs pays for them
and the timed mount does not wait for the kernel's background initialisation.

The "other disk" is a separate ext4 loop image holding the ISO (one
incompressible 700 MB file at paper) and S3's tree (fslab.workloads.support.data). It
is built once per run, reused by every unit read-only and freshly mounted, so
each unit reads it cold; it is deleted when fslab exits.
"""
from __future__ import annotations

import atexit
import hashlib
import json
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from fslab import filesystems
from fslab.system import state
from fslab.errors import StepFailed
from fslab.filesystems.base import Instance
from fslab.workloads.support.devices import DeviceAccount
from fslab.workloads.support.keptfs import KeptImageTarget
from fslab.system.measure import run_logged, step_usage
from fslab.plan import FilesystemSpec
from fslab.system.proc import run
from fslab.plan.profiles import MiB, Profile
from fslab.records import Measurement
from fslab.workloads.support.data import COPY_DATA, COPY_MODE, FileTree, Payload, s3_tree
from fslab.workloads.base import Case, CacheUse, Suite, UnitContext, UnitFailed, register
from fslab.workloads.capacity import S3_PARTITION_BYTES, capacity_share, raise_no_device

S3_ISO_BYTES = 700_000_000
ISO_FILE_ID = 1 << 40          # Payload id of the ISO: distinct from every tree file
FIND_PATTERN = "f*7.dat"       # about one file in ten
COPY = COPY_DATA
CACHE_USE = CacheUse("buffered at every policy, as the study ran: the source disk is mounted "
                     "fresh (cold reads), a recopy may read the page cache; a copy is timed "
                     "with its sync (its data on the device, as on the study's 512 MB "
                     "machine), other tasks' writeback on its own; device counters per task "
                     "say what reached the disk",
                     buffered=True)


@register
class TasksSuite(Suite):
    name = "tasks"
    study = "S3"
    needs_files = "needs a filesystem (task 01 is mkfs)"
    description = "S3 file-server tasks: mkfs, mount, copy/recopy/remove an ISO and a tree, ls -R, find, umount"

    def cases(self, spec, profile: Profile) -> list[Case]:
        # no params: the data set follows from the run's profile and seed (see dataset.json)
        return [Case("fileserver", config=profile.file_size(S3_ISO_BYTES),
                     image_bytes=S3_PARTITION_BYTES)]

    def describe(self, case: Case) -> dict:
        return {"parameters": {"iso_bytes": case.config, "copy": COPY_MODE}}

    def cache_policy(self, page_cache: str) -> CacheUse:
        return CACHE_USE

    def measure(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        if ctx.mountpoint_dir is not None:
            raise_no_device("tasks")
        log, log_rel = ctx.artifact("tasks.log")
        found, _ = ctx.artifact("find.txt")
        source = SourceDisk.for_run(ctx, iso_bytes=case.config)
        dataset, _ = ctx.artifact("dataset.json")
        dataset.write_text(json.dumps(source.describe(), indent=2))
        ctx.note_workload(copy=COPY_MODE)
        ctx.note_cache_policy(self)
        # the timed mkfs does all of mkfs's work, as 2006's did: nothing is left to the
        # kernel to finish after the timed mount
        if ctx.spec.ext4_lazy_init != "mkfs":
            ctx.note_workload(mkfs_init=f"ext4_lazy_init = {ctx.spec.ext4_lazy_init!r} not "
                                        "used: the timed mkfs writes inode tables and journal")
        inst = ctx.filesystem(case.image_bytes, spec=ctx.spec.model_copy(
            update={"ext4_lazy_init": "mkfs"}))
        ms: list[Measurement] = []

        def task(name: str, step: Callable[[], object], writeback: bool = True,
                 copied: int = 0, reread: bool = False) -> None:
            acct = DeviceAccount(inst.devices)
            with step_usage() as u:
                step()
                if copied:
                    # the study's copies were bound by its disk (512 MB of RAM): a copy is
                    # timed until its data is on the device, here where it would fit in memory
                    run(["sync", "-f", str(inst.mountpoint)])
            ms.extend(u.measurements(name, log_rel))
            if copied:   # the timed region's own device bytes: what the copy's time covered
                ms.extend(acct.measurements(name, log_rel, wrote=copied,
                                            read=copied if reread else 0))
            after = DeviceAccount(inst.devices)
            if writeback:
                with step_usage() as w:
                    run(["sync", "-f", str(inst.mountpoint)])
                ms.append(self.metrics.measure("writeback", w.elapsed_s, log_rel, case=name))
            if copied:
                ms.append(self.metrics.measure("copied_bytes", copied, log_rel, case=name))
                # what was still to write once the copy's time ended: about 0
                ms.extend(after.measurements(name, log_rel, prefix="writeback_"))
            else:
                ms.extend(acct.measurements(name, log_rel))

        def cmd(argv: list, stdout: Path | None = None) -> Callable[[], None]:
            return lambda: run_logged([str(a) for a in argv], log, stdout)

        try:
            with source.mounted() as src:
                mnt = inst.mountpoint
                inst.acquire()
                task("01-mkfs", inst.mkfs, writeback=False)
                task("02-mount", inst.mount, writeback=False)
                ctx.environment["filesystem"] = inst.effective()
                ms.append(self.metrics.measure("capacity_initial", capacity_share(inst, mnt)[0],
                                               log_rel, case="02-mount"))
                iso, tree = source.iso_bytes, source.tree.total_bytes
                task("03-copy-iso", cmd([*COPY, src / "iso.img", mnt / "iso.img"]), copied=iso)
                task("04-recopy-iso", cmd([*COPY, mnt / "iso.img", mnt / "iso-copy.img"]),
                     copied=iso, reread=True)
                task("05-remove-isos", cmd(["rm", "-rf", mnt / "iso.img", mnt / "iso-copy.img"]))
                task("06-copy-tree", cmd([*COPY, src / "tree", mnt / "tree"]), copied=tree)
                task("07-recopy-tree", cmd([*COPY, mnt / "tree", mnt / "tree-copy"]),
                     copied=tree, reread=True)
                # the study's "operations into the file tree": one copy of it
                task("09-ls-R", cmd(["ls", "-R", mnt / "tree"], stdout=mnt / "listing.txt"))
                task("10-find", cmd(["find", mnt / "tree", "-name", FIND_PATTERN], stdout=found))
                task("08-remove-trees", cmd(["rm", "-rf", mnt / "tree", mnt / "tree-copy",
                                             mnt / "listing.txt"]))
                task("11-umount", inst.unmount, writeback=False)
                # residual capacity on a fresh mount: the umount committed every free, and
                # measuring before it would have done 11's work untimed
                inst.mount()
                ms.append(self.metrics.measure("capacity_residual", capacity_share(inst, mnt)[0],
                                               log_rel, case="08-remove-trees"))
        except StepFailed as e:
            raise UnitFailed(str(e), ms) from None
        finally:
            inst.close()
        if not found.read_text().strip():
            raise UnitFailed(f"find -name {FIND_PATTERN!r} matched nothing in the tree copies", ms)
        return ms


class SourceDisk:
    """The other disk: an ext4 image with the ISO and the tree, built once per run and data set."""
    _built: dict[Path, "SourceDisk"] = {}

    def __init__(self, directory: Path, workdir: Path, payload: Payload, iso_bytes: int,
                 tree: FileTree):
        self.directory, self.workdir = directory, workdir
        self.payload, self.iso_bytes, self.tree = payload, iso_bytes, tree
        self.ready = directory / "ready"

    @classmethod
    def for_run(cls, ctx: UnitContext, iso_bytes: int) -> "SourceDisk":
        seed = ctx.plan_seed   # the same data for every filesystem and iteration
        tree = s3_tree(ctx.profile, seed)
        key = hashlib.sha1(repr((seed, iso_bytes, tree.sizes)).encode()).hexdigest()[:10]
        directory = ctx.workdir / f"s3-source-{key}"
        disk = cls._built.get(directory)
        if disk is None or not disk.ready.exists():
            disk = cls(directory, ctx.workdir, Payload(seed), iso_bytes, tree)
            ctx.log(f"building the source disk ({(iso_bytes + tree.total_bytes) / 1e6:.0f} MB of "
                    f"test data, once per run)")
            disk.build()
            cls._built[directory] = disk
            atexit.register(disk.discard)
        return disk

    def _instance(self, mount_options: list[str]) -> Instance:
        spec = FilesystemSpec(name="ext4", variant="source", mount_options=mount_options)
        size = int((self.iso_bytes + self.tree.total_bytes) * 1.15) + 256 * MiB
        return Instance(filesystems.get("ext4"), spec, KeptImageTarget(self.directory),
                        self.workdir, self.directory.name, size)

    def build(self) -> None:
        self.discard()
        state.note("dir", str(self.directory))   # `fslab cleanup` deletes it after a crash
        inst = self._instance([])
        try:
            inst.mkfs()
            inst.mount()
            self.payload.write(inst.mountpoint / "iso.img", ISO_FILE_ID, self.iso_bytes)
            self.tree.materialize(inst.mountpoint, self.payload)
        finally:
            inst.close()
        self.ready.touch()

    @contextmanager
    def mounted(self) -> Iterator[Path]:
        """The source, mounted read-only for one unit (a fresh mount: its cache is cold)."""
        inst = self._instance(["ro"])
        try:
            inst.acquire()
            inst.mount()
            yield inst.mountpoint
        finally:
            inst.close()

    def describe(self) -> dict:
        return {"iso_bytes": self.iso_bytes, "tree_files": len(self.tree.files),
                "tree_dirs": len(self.tree.dirs), "tree_bytes": self.tree.total_bytes,
                "tree_file_bytes_min": min(self.tree.sizes), "tree_file_bytes_max": max(self.tree.sizes),
                "seed": self.payload.seed}

    def discard(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
        state.forget("dir", str(self.directory))
