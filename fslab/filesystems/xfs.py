"""XFS on the host kernel."""
from fslab.filesystems import register
from fslab.filesystems.base import ATIME, LAZYTIME, FeatureClaim, Option
from fslab.filesystems.base import Driver, Instance
from fslab.plan import FilesystemSpec
from fslab.system.proc import first_line, run


@register
class Xfs(Driver):
    name = fstype = "xfs"
    mkfs_tool = "mkfs.xfs"
    packages = ["xfsprogs"]
    min_bytes = 300 << 20     # xfsprogs >= 5.19 refuses smaller filesystems
    grow_tool = "xfs_growfs"
    feature_claims = property(lambda self: {"xfs": FEATURE_CLAIMS})
    catalogue = property(lambda self: CATALOGUE)

    def mkfs_args(self, spec: FilesystemSpec) -> list[str]:
        return ["-f", "-q"]

    def versions(self) -> dict[str, str]:
        v = first_line(["mkfs.xfs", "-V"])
        return {"mkfs.xfs": v} if v else {}

    def check(self, inst: Instance) -> dict:
        r = run(["xfs_repair", "-n", inst.devices[0]], check=False, timeout=1800)
        return {"clean": r.returncode == 0, "exit": r.returncode,
                "output": (r.stdout + r.stderr)[-4000:]}

    def grow_command(self, inst: Instance) -> list[str] | None:
        return ["xfs_growfs", str(inst.mountpoint)]


# what the documentation claims (fslab/features/catalog.py lists the features)
XFS = "xfs(5), mkfs.xfs(8)"
FEATURE_CLAIMS = {
    "data_checksums": FeatureClaim("no", "CRCs protect metadata only", XFS),
    "metadata_checksums": FeatureClaim("yes", "crc=1, default since xfsprogs 3.2.3 (v5 format)", XFS),
    "copy_on_write": FeatureClaim("partial", "only for shared (reflinked) extents; otherwise in place", XFS),
    "journaling": FeatureClaim("yes", "metadata-only log (no data journaling)", XFS),
    "snapshots": FeatureClaim("no", "none in the filesystem; xfs_freeze + LVM snapshots", "xfs_freeze(8)"),
    "scrub": FeatureClaim("partial", "xfs_scrub checks metadata online (marked experimental); no data "
                "checksums to heal from", "xfs_scrub(8)"),
    "raid": FeatureClaim("no", "use md or LVM below it (mkfs.xfs reads their stripe geometry)", XFS),
    "resilvering": FeatureClaim("no", "redundancy is md's job", XFS),
    "online_grow": FeatureClaim("yes", "xfs_growfs, only while mounted", "xfs_growfs(8)"),
    "online_shrink": FeatureClaim("no", "XFS cannot shrink", "xfs_growfs(8)"),
    "max_file_size": FeatureClaim("yes", "8 EiB", XFS),
    "max_volume_size": FeatureClaim("yes", "8 EiB", XFS),
    "extents": FeatureClaim("yes", "B+tree extent maps", XFS),
    "delayed_allocation": FeatureClaim("yes", "always on", XFS),
    "deduplication": FeatureClaim("partial", "out-of-band only (FIDEDUPERANGE, e.g. duperemove); needs "
                        "reflink=1", "ioctl_fideduperange(2), mkfs.xfs(8)"),
    "compression": FeatureClaim("no", "no transparent compression", XFS),
    "reflinks": FeatureClaim("yes", "reflink=1, default since xfsprogs 5.1", "mkfs.xfs(8)"),
    "fallocate": FeatureClaim("yes", "unwritten extents", "fallocate(2)"),
    "inline_small_files": FeatureClaim("no", "only directories and symlinks live inline in the inode", XFS),
    "reserved_space": FeatureClaim("partial", "no root reserve; a small internal reserve pool for metadata",
                         "xfs_io(8) resblks"),
    "direct_io": FeatureClaim("yes", "O_DIRECT", "open(2)"),
    "trim": FeatureClaim("yes", "fstrim, or the discard mount option", "xfs(5), fstrim(8)"),
    "tunable_block_size": FeatureClaim("yes", "mkfs.xfs -b size=512..65536 (mountable up to the page size)",
                             "mkfs.xfs(8)"),
}


# The options worth trying for performance (Driver.catalogue)
XFS_MOUNT = "xfs(5)"
CATALOGUE = (
    # not here, as they cannot make a workload faster (issue 36: a noisy decide combined
    # largeio "+69.5%" and logbufs=4 "+49.4%"): largeio changes only the preferred I/O
    # size stat() reports; logbufs below its default 8 only waits more on the log; wsync
    # makes namespace operations synchronous; discard TRIMs on every delete
    ATIME, LAZYTIME,
    Option("logbsize", "mount", ("logbsize=64k", "logbsize=128k", "logbsize=256k"), "safe",
           "larger in-memory log buffers: fewer, larger log writes under metadata load",
           XFS_MOUNT),
    Option("allocsize", "mount", ("allocsize=64k", "allocsize=1m", "allocsize=16m"), "safe",
           "a fixed speculative preallocation past EOF for buffered appends (default: dynamic)",
           XFS_MOUNT),
    Option("-d agcount", "mkfs", ("-d agcount=2", "-d agcount=8"), "safe",
           "allocation groups (default 4 on small devices): more let more threads allocate "
           "at once; each must hold at least 16 MiB", "mkfs.xfs(8)"),
    Option("-i size", "mkfs", ("-i size=1024", "-i size=2048"), "safe",
           "larger inodes (default 512) keep more extents and attributes inline",
           "mkfs.xfs(8)"),
    Option("-n size", "mkfs", ("-n size=16k", "-n size=64k"), "safe",
           "larger directory blocks (default 4k): faster lookups in large directories",
           "mkfs.xfs(8)"),
    Option("-b size", "mkfs", ("-b size=1024", "-b size=2048"), "safe",
           "smaller blocks waste less space on small files, cost more metadata per large file",
           "mkfs.xfs(8)"),
    Option("-m reflink", "mkfs", ("-m reflink=0",), "trade",
           "no reference-count btree to maintain on writes", "mkfs.xfs(8)",
           trades="no reflinks (cp --reflink, FICLONE) and no out-of-band deduplication"),
    Option("-m rmapbt", "mkfs", ("-m rmapbt=1",), "safe",
           "a reverse-mapping btree: more metadata writes, better online repair",
           "mkfs.xfs(8)"),
)
