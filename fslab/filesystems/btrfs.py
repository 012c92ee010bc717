"""Btrfs on the host kernel; with devices > 1 it makes a raid1 across loop devices."""
from __future__ import annotations

import re
from typing import Any

from fslab.filesystems import register
from fslab.filesystems.base import ATIME, LAZYTIME, FeatureClaim, Option
from fslab.filesystems.base import Driver, Enable, Instance
from fslab.system.proc import first_line, run

BLOCK = 4096


@register
class Btrfs(Driver):
    name = fstype = "btrfs"
    mkfs_tool = "mkfs.btrfs"
    packages = ["btrfs-progs"]
    min_bytes = 128 << 20
    grow_tool = "btrfs filesystem resize max"
    feature_claims = property(lambda self: {"btrfs": FEATURE_CLAIMS})
    catalogue = property(lambda self: CATALOGUE)

    def mkfs(self, inst: Instance) -> None:
        args = ["-f", "-q"]
        user = " ".join(inst.spec.mkfs_options)
        if len(inst.devices) > 1 and "-d" not in user.split() and "--data" not in user:
            args += ["-d", "raid1", "-m", "raid1"]
        run(["mkfs.btrfs", *args, *inst.spec.mkfs_options, *inst.devices], timeout=1800)
        if len(inst.devices) > 1:
            run(["btrfs", "device", "scan", *inst.devices])

    def versions(self) -> dict[str, str]:
        v = first_line(["mkfs.btrfs", "--version"])
        return {"mkfs.btrfs": v} if v else {}

    def effective_options(self, inst: Instance) -> dict:
        info = super().effective_options(inst)
        r = run(["btrfs", "filesystem", "df", "-b", str(inst.mountpoint)], check=False)
        if r.ok:
            info["profiles"] = r.stdout.strip()
        return info

    def check(self, inst: Instance) -> dict:
        r = run(["btrfs", "check", "--readonly", inst.devices[0]], check=False, timeout=1800)
        return {"clean": r.returncode == 0, "exit": r.returncode,
                "output": (r.stdout + r.stderr)[-4000:]}

    # --- quirks asked by suites and probes ----------------------------------------
    def sync_metadata(self, inst: Instance) -> None:
        # commit the transaction so the chunk accounting is current
        run(["btrfs", "filesystem", "sync", str(inst.mountpoint)], check=False)

    def error_counters(self, inst: Instance) -> dict[str, Any]:
        return {"btrfs_device_stats": device_stats(str(inst.mountpoint))}

    def scrub(self, inst: Instance) -> dict[str, Any] | None:
        r = run(["btrfs", "scrub", "start", "-B", str(inst.mountpoint)], check=False, timeout=1800)
        text = r.stdout + r.stderr
        res: dict[str, Any] = {"exit": r.returncode, "output": text}
        for key in ("csum", "verify", "read", "super"):
            m = re.search(rf"\b{key}=(\d+)", text)
            if m:
                res[f"{key}_errors"] = int(m[1])
        for key in ("Corrected", "Uncorrectable", "Unverified"):
            m = re.search(rf"{key}:\s+(\d+)", text)
            if m:
                res[key.lower()] = int(m[1])
        res["clean"] = "no errors found" in text
        return res

    def physical_locations(self, inst: Instance, fiemap_offset: int) -> set[tuple[int, int]]:
        """FIEMAP gives btrfs's logical address: btrfs-map-logical says where every mirror is."""
        r = run(["btrfs-map-logical", "-l", str(fiemap_offset), "-b", str(BLOCK), inst.devices[0]],
                check=False, timeout=60)
        out = set()
        for m in re.finditer(r"physical (\d+) device (\S+)", r.stdout):
            if m[2] in inst.devices:
                out.add((inst.devices.index(m[2]), int(m[1])))
        return out

    def grow_command(self, inst: Instance) -> list[str] | None:
        return ["btrfs", "filesystem", "resize", "max", str(inst.mountpoint)]

    def snapshots(self) -> bool:
        return True

    def snapshot(self, inst: Instance, name: str) -> str:
        mnt = inst.mountpoint
        run(["btrfs", "subvolume", "snapshot", "-r", str(mnt), str(mnt / f"{name}-snap")])
        return "btrfs subvolume snapshot -r"

    def read_snapshot(self, inst: Instance, name: str, relpath: str) -> tuple[bytes, str]:
        return ((inst.mountpoint / f"{name}-snap" / relpath).read_bytes(),
                "read back from the snapshot subvolume")

    def compression_enable(self) -> Enable | None:
        return Enable(mount_options=["compress=zstd"])


def device_stats(mountpoint: str) -> dict[str, int]:
    """Summed counters of `btrfs device stats` (write_io_errs, corruption_errs, ...)."""
    r = run(["btrfs", "device", "stats", mountpoint], check=False)
    totals: dict[str, int] = {}
    for line in r.stdout.splitlines():
        m = re.match(r"\[.*\]\.(\w+)\s+(\d+)", line.strip())
        if m:
            totals[m[1]] = totals.get(m[1], 0) + int(m[2])
    return totals


# what the documentation claims (fslab/features/catalog.py lists the features)
BTRFS = "btrfs(5)"
FEATURE_CLAIMS = {
    "data_checksums": FeatureClaim("yes", "crc32c by default; xxhash, sha256, blake2 since Linux 5.5", BTRFS),
    "metadata_checksums": FeatureClaim("yes", "every tree block", BTRFS),
    "copy_on_write": FeatureClaim("yes", "data and metadata (nodatacow per file or mount disables it for data)",
                        BTRFS),
    "journaling": FeatureClaim("no", "no journal: CoW transactions, plus a log tree for fsync", BTRFS),
    "snapshots": FeatureClaim("yes", "subvolume snapshots, writable or read-only", "btrfs-subvolume(8)"),
    "scrub": FeatureClaim("yes", "btrfs scrub verifies checksums; repairs from DUP/RAID copies",
                "btrfs-scrub(8)"),
    "raid": FeatureClaim("yes", "raid0/1/10/1c3/1c4; raid5/6 documented as unstable", "mkfs.btrfs(8)"),
    "resilvering": FeatureClaim("partial", "btrfs replace or balance after adding a device; nothing automatic",
                      "btrfs-replace(8)"),
    "online_grow": FeatureClaim("yes", "btrfs filesystem resize", "btrfs-filesystem(8)"),
    "online_shrink": FeatureClaim("yes", "btrfs filesystem resize -SIZE", "btrfs-filesystem(8)"),
    "max_file_size": FeatureClaim("yes", "16 EiB (8 EiB in practice: Linux's loff_t)", BTRFS),
    "max_volume_size": FeatureClaim("yes", "16 EiB", BTRFS),
    "extents": FeatureClaim("yes", "extent-based", BTRFS),
    "delayed_allocation": FeatureClaim("yes", "allocation at writeback", BTRFS),
    "deduplication": FeatureClaim("partial", "out-of-band only (FIDEDUPERANGE, e.g. duperemove); no in-line "
                        "dedup", "btrfs(5), ioctl_fideduperange(2)"),
    "compression": FeatureClaim("yes", "mount -o compress=zlib|lzo|zstd (zstd since Linux 4.14)", BTRFS),
    "reflinks": FeatureClaim("yes", "cp --reflink, FICLONE", BTRFS),
    "fallocate": FeatureClaim("yes", "preallocated extents (a later overwrite of them is still CoW)", BTRFS),
    "inline_small_files": FeatureClaim("yes", "files up to max_inline (default 2048 bytes) in the metadata tree",
                             BTRFS),
    "reserved_space": FeatureClaim("partial", "no root reserve; a global metadata reserve", BTRFS),
    "direct_io": FeatureClaim("yes", "O_DIRECT (compressed or checksummed cases may fall back to buffered)",
                    BTRFS),
    "trim": FeatureClaim("yes", "fstrim; discard=async by default since Linux 6.2 on SSDs", BTRFS),
    "tunable_block_size": FeatureClaim("partial", "sectorsize must match the page size; nodesize 4k..64k",
                             "mkfs.btrfs(8)"),
}


# The options worth trying for performance (Driver.catalogue)
CATALOGUE = (
    ATIME, LAZYTIME,
    # discard=sync (a TRIM at every commit) slows commits and speeds nothing: not here
    Option("discard", "mount", ("discard=async",), "safe",
           "TRIM of freed extents, batched in the background (default: none, fstrim then)",
           BTRFS),
    Option("compress", "mount", ("compress=zstd", "compress=zstd:1", "compress=lzo",
                                 "compress=zlib"), "safe",
           "transparent compression where it pays (less I/O, more CPU)", BTRFS,
           shows_as=(("compress=zstd", "compress=zstd:3"), ("compress=zlib", "compress=zlib:3")),
           conflicts=("compress-force",)),
    Option("compress-force", "mount", ("compress-force=zstd",), "safe",
           "compress every write, even data that looked incompressible", BTRFS,
           shows_as=(("compress-force=zstd", "compress-force=zstd:3"),)),
    Option("nodatacow", "mount", ("nodatacow",), "trade",
           "new files are overwritten in place (no copy-on-write)", BTRFS,
           trades="no data checksums and no compression for those files; a crash mid-write "
           "can leave a block half old, half new",
           conflicts=("compress", "compress-force", "nodatasum")),
    Option("nodatasum", "mount", ("nodatasum",), "trade",
           "no checksums computed for new file data", BTRFS,
           trades="no data checksums: silent corruption of file data goes undetected"),
    Option("commit", "mount", ("commit=60", "commit=120"), "trade",
           "the transaction commits every N s instead of every 30 s", BTRFS,
           trades="a crash loses up to N s of writes instead of 30 s"),
    Option("ssd", "mount", ("ssd", "nossd", "ssd_spread"), "safe",
           "allocation tuned for SSDs (clustering) or rotating disks", BTRFS),
    Option("autodefrag", "mount", ("autodefrag",), "safe",
           "small random writes into files queue them for background defragmentation", BTRFS),
    Option("max_inline", "mount", ("max_inline=0", "max_inline=4096"), "safe",
           "the largest file kept inline in the metadata tree (default 2048)", BTRFS),
    Option("notreelog", "mount", ("notreelog",), "safe",
           "no log tree: each fsync commits a whole transaction (slower fsync, same "
           "durability)", BTRFS),
    Option("flushoncommit", "mount", ("flushoncommit",), "safe",
           "every transaction commit flushes all dirty data first", BTRFS),
    Option("-n", "mkfs", ("-n 32768", "-n 65536"), "safe",
           "larger metadata nodes (default 16k): fewer tree levels, more bytes rewritten per "
           "change", "mkfs.btrfs(8)"),
    Option("-m", "mkfs", ("-m single",), "trade",
           "one copy of metadata instead of two (DUP)", "mkfs.btrfs(8)",
           trades="a damaged metadata block cannot be repaired from its second copy"),
    Option("--csum", "mkfs", ("--csum xxhash", "--csum sha256", "--csum blake2"), "safe",
           "the checksum algorithm (default crc32c): stronger ones cost CPU", "mkfs.btrfs(8)"),
)
