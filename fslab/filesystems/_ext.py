"""Shared code of the ext2/ext3/ext4 drivers (each has its own module)."""
from __future__ import annotations

import time
from pathlib import Path

from fslab.filesystems.base import ATIME, LAZYTIME, FeatureClaim, Driver, Instance, Option
from fslab.plan import FilesystemSpec
from fslab.system.proc import first_line, run


CAP_SYS_RESOURCE = 24


class ExtDriver(Driver):
    packages = ["e2fsprogs"]
    journal = True
    grow_tool = "resize2fs"

    @property
    def mkfs_tool(self) -> str:   # type: ignore[override]
        return f"mkfs.{self.name}"

    def mkfs_args(self, spec: FilesystemSpec) -> list[str]:
        args = ["-F", "-q"]
        user = " ".join(spec.mkfs_options)
        # Lazy inode-table/journal init would write in the background during the
        # measurements; do it at mkfs time instead, unless the user chose otherwise.
        if self.journal and spec.ext4_lazy_init == "mkfs" and "lazy_itable_init" not in user:
            args += ["-E", "lazy_itable_init=0,lazy_journal_init=0"]
        return args

    def after_mount(self, inst: Instance) -> dict:
        user = " ".join(inst.spec.mkfs_options)
        # the options mkfs ran with, fslab's own included (the report's environment shows them)
        ran = {"mkfs_args": " ".join([*self.mkfs_args(inst.spec), *inst.spec.mkfs_options])}
        if not self.journal:
            return ran
        if inst.spec.ext4_lazy_init == "wait" or "lazy_itable_init=1" in user:
            waited = wait_lazyinit()
            return {**ran, "lazy_init": f"waited {waited:.1f}s for ext4lazyinit to finish"}
        if "lazy_itable_init" in user:
            return {**ran, "lazy_init": "as given in mkfs_options"}
        return {**ran, "lazy_init": "inode tables and journal written by mkfs "
                                   "(-E lazy_itable_init=0,lazy_journal_init=0)"}

    def versions(self) -> dict[str, str]:
        v = first_line(["mke2fs", "-V"])
        return {"mke2fs": v} if v else {}

    def check(self, inst: Instance) -> dict:
        r = run(["e2fsck", "-fn", inst.devices[0]], check=False, timeout=1800)
        return {"clean": r.returncode == 0, "exit": r.returncode,
                "output": (r.stdout + r.stderr)[-4000:]}

    def grow_command(self, inst: Instance) -> list[str] | None:
        return ["resize2fs", inst.devices[0]]

    def grow_failure_hint(self) -> str:
        if has_capability(CAP_SYS_RESOURCE):
            return ""
        return " (ext4's online-resize ioctl needs CAP_SYS_RESOURCE, which this process lacks)"


def has_capability(bit: int) -> bool:
    """Is capability `bit` in this process's effective set? (containers often drop some)"""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> bit & 1)
    return False


def wait_lazyinit(timeout: float = 600) -> float:
    """Block until no ext4lazyinit kernel thread is running (mmtests' approach)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        busy = False
        for comm in Path("/proc").glob("[0-9]*/comm"):
            try:
                if comm.read_text().strip() == "ext4lazyinit":
                    busy = True
                    break
            except OSError:
                continue
        if not busy:
            break
        time.sleep(0.5)
    return time.monotonic() - t0


# what the documentation claims (fslab/features/catalog.py lists the features)
EXT4 = "ext4(5)"
EXT4_FEATURE_CLAIMS = {
    "data_checksums": FeatureClaim("no", "metadata_csum covers metadata and the journal, never file data", EXT4),
    "metadata_checksums": FeatureClaim("yes", "metadata_csum, default since e2fsprogs 1.43", EXT4),
    "copy_on_write": FeatureClaim("no", "updates in place", EXT4),
    "journaling": FeatureClaim("yes", "jbd2 journal; data=ordered by default, data=journal/writeback by "
                     "mount option", "ext4(5), mount(8)"),
    "snapshots": FeatureClaim("no", "none in the filesystem; use LVM or dm-snapshot below it", EXT4),
    "scrub": FeatureClaim("no", "offline e2fsck checks metadata only; e2scrub needs LVM", "e2fsck(8), e2scrub(8)"),
    "raid": FeatureClaim("no", "use md or LVM below it", EXT4),
    "resilvering": FeatureClaim("no", "redundancy is md's job", EXT4),
    "online_grow": FeatureClaim("yes", "resize2fs on the mounted filesystem (resize_inode)", "resize2fs(8)"),
    "online_shrink": FeatureClaim("no", "shrinking needs the filesystem unmounted", "resize2fs(8)"),
    "max_file_size": FeatureClaim("yes", "16 TiB with 4 KiB blocks", EXT4),
    "max_volume_size": FeatureClaim("yes", "1 EiB with 64bit and 4 KiB blocks", EXT4),
    "extents": FeatureClaim("yes", "extent feature, default", EXT4),
    "delayed_allocation": FeatureClaim("yes", "delalloc, default (nodelalloc to disable)", EXT4),
    "deduplication": FeatureClaim("no", "no in-line or out-of-band (FIDEDUPERANGE) dedup", EXT4),
    "compression": FeatureClaim("no", "no transparent compression", EXT4),
    "reflinks": FeatureClaim("no", "no shared extents (FICLONE unsupported)", EXT4),
    "fallocate": FeatureClaim("yes", "unwritten extents", "ext4(5), fallocate(2)"),
    "inline_small_files": FeatureClaim("partial", "opt-in: mkfs -O inline_data stores files up to ~60 bytes "
                             "(more with large inodes) in the inode", EXT4),
    "reserved_space": FeatureClaim("yes", "5% of blocks reserved for root (mke2fs -m)", "mke2fs(8)"),
    "direct_io": FeatureClaim("yes", "O_DIRECT", "open(2)"),
    "trim": FeatureClaim("yes", "fstrim, or the discard mount option", "ext4(5), fstrim(8)"),
    "tunable_block_size": FeatureClaim("yes", "mke2fs -b 1024..65536 (mountable up to the page size)", "mke2fs(8)"),
}
EXT3_FEATURE_CLAIMS = {**EXT4_FEATURE_CLAIMS,
         "metadata_checksums": FeatureClaim("no", "ext3 has no metadata_csum", EXT4),
         "extents": FeatureClaim("no", "indirect block maps", EXT4),
         "delayed_allocation": FeatureClaim("no", "allocates at write time", EXT4),
         "max_file_size": FeatureClaim("yes", "2 TiB with 4 KiB blocks", EXT4),
         "max_volume_size": FeatureClaim("yes", "16 TiB with 4 KiB blocks", EXT4),
         "inline_small_files": FeatureClaim("no", "inline_data needs ext4", EXT4),
         "fallocate": FeatureClaim("no", "fallocate(2) needs extents: EOPNOTSUPP", "fallocate(2)")}
EXT2_FEATURE_CLAIMS = {**EXT3_FEATURE_CLAIMS,
         "journaling": FeatureClaim("no", "no journal: fsck after every crash", EXT4),
         "online_grow": FeatureClaim("partial", "resize2fs online only with the resize_inode feature",
                           "resize2fs(8)")}


# The options worth trying for performance (Driver.catalogue): mount options of ext4(5)
# (the ext4 driver mounts ext2 and ext3 too) and mke2fs(8) arguments.
_EXT_MOUNT = "ext4(5), mount(8)"
_LOST_ON_CRASH = "a crash loses up to {} s of writes instead of 5 s"
EXT_INODE_SIZE = Option("-I", "mkfs", ("-I 512", "-I 1024"), "safe",
                        "larger inodes hold more extended attributes and inline extents",
                        "mke2fs(8)")
EXT_SMALL_INODE = Option("-I", "mkfs", ("-I 128",), "trade",
                         "smaller inodes: more per block, less inode-table I/O", "mke2fs(8)",
                         trades="no timestamps past 2038 and no nanoseconds, no inline data or "
                         "in-inode extended attributes")
EXT_BLOCK = Option("-b", "mkfs", ("-b 1024", "-b 2048"), "safe",
                   "smaller blocks waste less space on small files, cost more metadata per "
                   "large file", "mke2fs(8)")
EXT_INODE_RATIO = Option("-i", "mkfs", ("-i 65536",), "trade",
                         "fewer inodes: a smaller inode table to write and scan", "mke2fs(8)",
                         trades="the filesystem runs out of inodes with fewer (small) files")
JOURNALED = (
    Option("data", "mount", ("data=journal",), "safe",
           "file data goes through the journal too (writes twice; no delayed allocation and "
           "no O_DIRECT)", _EXT_MOUNT),
    Option("data", "mount", ("data=writeback",), "trade",
           "data is no longer written before the metadata that points at it", _EXT_MOUNT,
           trades="after a crash, files may hold stale blocks of deleted files"),
    Option("commit", "mount", ("commit=30", "commit=60"), "trade",
           "the journal commits every N s instead of every 5 s", _EXT_MOUNT,
           trades=_LOST_ON_CRASH.format("N")),
    Option("barrier", "mount", ("barrier=0",), "trade",
           "no cache flushes at journal commits", _EXT_MOUNT,
           trades="a power cut can corrupt the filesystem on a device with a volatile write "
           "cache", shows_as=(("barrier=0", "nobarrier"),)),
    Option("-J size", "mkfs", ("-J size=64",), "safe",
           "a larger journal (MiB): fewer forced checkpoints under heavy metadata writes",
           "mke2fs(8)"),
    Option("-O ^has_journal", "mkfs", ("-O ^has_journal",), "trade",
           "no journal: metadata is written once", "mke2fs(8), ext4(5)",
           trades="a crash needs a full fsck and can lose recent metadata changes",
           conflicts=("data", "-J size")),
)
EXT4_ONLY = (
    Option("-O inline_data", "mkfs", ("-O inline_data",), "safe",
           "files of up to ~60 bytes (more with larger inodes) live inside their inode",
           "mke2fs(8), ext4(5)"),
    Option("-O ^metadata_csum", "mkfs", ("-O ^metadata_csum",), "trade",
           "no checksums computed on metadata writes", "ext4(5)",
           trades="no metadata checksums: corrupted metadata goes undetected"),
    Option("inode_readahead_blks", "mount", ("inode_readahead_blks=64",
                                             "inode_readahead_blks=256"), "safe",
           "inode-table blocks read ahead (default 32)", _EXT_MOUNT),
)


def ext_catalogue(journal: bool, ext4: bool) -> tuple[Option, ...]:
    # no discard: a TRIM on every delete makes deletes slower and nothing faster (it is
    # for the device's sake, fstrim does it in batches)
    return (ATIME, LAZYTIME, EXT_INODE_SIZE, EXT_SMALL_INODE, EXT_BLOCK, EXT_INODE_RATIO,
            *(JOURNALED if journal else ()), *(EXT4_ONLY if ext4 else ()))
