"""What each filesystem's own documentation claims, one row per catalog feature.

This table is the single place claims live (Driver.features() reads it). Every
claim names the document it comes from, so a reader can check it; version notes
say from when a feature exists or is on by default. ZFS runs here either as
kernel OpenZFS or as Debian's zfs-fuse 0.7.0 (pool version 23, 2010-era code:
no feature flags, so no lz4/zstd, embedded data, block cloning or TRIM), and the
two differ enough to get separate tables.
"""
from __future__ import annotations

from dataclasses import dataclass

from fslab.errors import FslabError


@dataclass(frozen=True)
class Claim:
    status: str          # "yes" | "no" | "partial"
    note: str            # versions, defaults, limits
    ref: str             # the tool's own documentation

    def as_dict(self) -> dict:
        return {"status": self.status, "note": self.note, "ref": self.ref}


def _c(status: str, note: str, ref: str) -> Claim:
    return Claim(status, note, ref)


EXT4 = "ext4(5)"
_EXT = {
    "data_checksums": _c("no", "metadata_csum covers metadata and the journal, never file data", EXT4),
    "metadata_checksums": _c("yes", "metadata_csum, default since e2fsprogs 1.43", EXT4),
    "copy_on_write": _c("no", "updates in place", EXT4),
    "journaling": _c("yes", "jbd2 journal; data=ordered by default, data=journal/writeback by "
                     "mount option", "ext4(5), mount(8)"),
    "snapshots": _c("no", "none in the filesystem; use LVM or dm-snapshot below it", EXT4),
    "scrub": _c("no", "offline e2fsck checks metadata only; e2scrub needs LVM", "e2fsck(8), e2scrub(8)"),
    "raid": _c("no", "use md or LVM below it", EXT4),
    "resilvering": _c("no", "redundancy is md's job", EXT4),
    "online_grow": _c("yes", "resize2fs on the mounted filesystem (resize_inode)", "resize2fs(8)"),
    "online_shrink": _c("no", "shrinking needs the filesystem unmounted", "resize2fs(8)"),
    "max_file_size": _c("yes", "16 TiB with 4 KiB blocks", EXT4),
    "max_volume_size": _c("yes", "1 EiB with 64bit and 4 KiB blocks", EXT4),
    "extents": _c("yes", "extent feature, default", EXT4),
    "delayed_allocation": _c("yes", "delalloc, default (nodelalloc to disable)", EXT4),
    "deduplication": _c("no", "no in-line or out-of-band (FIDEDUPERANGE) dedup", EXT4),
    "compression": _c("no", "no transparent compression", EXT4),
    "reflinks": _c("no", "no shared extents (FICLONE unsupported)", EXT4),
    "fallocate": _c("yes", "unwritten extents", "ext4(5), fallocate(2)"),
    "inline_small_files": _c("partial", "opt-in: mkfs -O inline_data stores files up to ~60 bytes "
                             "(more with large inodes) in the inode", EXT4),
    "reserved_space": _c("yes", "5% of blocks reserved for root (mke2fs -m)", "mke2fs(8)"),
    "direct_io": _c("yes", "O_DIRECT", "open(2)"),
    "trim": _c("yes", "fstrim, or the discard mount option", "ext4(5), fstrim(8)"),
    "tunable_block_size": _c("yes", "mke2fs -b 1024..65536 (mountable up to the page size)", "mke2fs(8)"),
}
_EXT3 = {**_EXT,
         "metadata_checksums": _c("no", "ext3 has no metadata_csum", EXT4),
         "extents": _c("no", "indirect block maps", EXT4),
         "delayed_allocation": _c("no", "allocates at write time", EXT4),
         "max_file_size": _c("yes", "2 TiB with 4 KiB blocks", EXT4),
         "max_volume_size": _c("yes", "16 TiB with 4 KiB blocks", EXT4),
         "inline_small_files": _c("no", "inline_data needs ext4", EXT4),
         "fallocate": _c("no", "fallocate(2) needs extents: EOPNOTSUPP", "fallocate(2)")}
_EXT2 = {**_EXT3,
         "journaling": _c("no", "no journal: fsck after every crash", EXT4),
         "online_grow": _c("partial", "resize2fs online only with the resize_inode feature",
                           "resize2fs(8)")}

XFS = "xfs(5), mkfs.xfs(8)"
_XFS = {
    "data_checksums": _c("no", "CRCs protect metadata only", XFS),
    "metadata_checksums": _c("yes", "crc=1, default since xfsprogs 3.2.3 (v5 format)", XFS),
    "copy_on_write": _c("partial", "only for shared (reflinked) extents; otherwise in place", XFS),
    "journaling": _c("yes", "metadata-only log (no data journaling)", XFS),
    "snapshots": _c("no", "none in the filesystem; xfs_freeze + LVM snapshots", "xfs_freeze(8)"),
    "scrub": _c("partial", "xfs_scrub checks metadata online (marked experimental); no data "
                "checksums to heal from", "xfs_scrub(8)"),
    "raid": _c("no", "use md or LVM below it (mkfs.xfs reads their stripe geometry)", XFS),
    "resilvering": _c("no", "redundancy is md's job", XFS),
    "online_grow": _c("yes", "xfs_growfs, only while mounted", "xfs_growfs(8)"),
    "online_shrink": _c("no", "XFS cannot shrink", "xfs_growfs(8)"),
    "max_file_size": _c("yes", "8 EiB", XFS),
    "max_volume_size": _c("yes", "8 EiB", XFS),
    "extents": _c("yes", "B+tree extent maps", XFS),
    "delayed_allocation": _c("yes", "always on", XFS),
    "deduplication": _c("partial", "out-of-band only (FIDEDUPERANGE, e.g. duperemove); needs "
                        "reflink=1", "ioctl_fideduperange(2), mkfs.xfs(8)"),
    "compression": _c("no", "no transparent compression", XFS),
    "reflinks": _c("yes", "reflink=1, default since xfsprogs 5.1", "mkfs.xfs(8)"),
    "fallocate": _c("yes", "unwritten extents", "fallocate(2)"),
    "inline_small_files": _c("no", "only directories and symlinks live inline in the inode", XFS),
    "reserved_space": _c("partial", "no root reserve; a small internal reserve pool for metadata",
                         "xfs_io(8) resblks"),
    "direct_io": _c("yes", "O_DIRECT", "open(2)"),
    "trim": _c("yes", "fstrim, or the discard mount option", "xfs(5), fstrim(8)"),
    "tunable_block_size": _c("yes", "mkfs.xfs -b size=512..65536 (mountable up to the page size)",
                             "mkfs.xfs(8)"),
}

BTRFS = "btrfs(5)"
_BTRFS = {
    "data_checksums": _c("yes", "crc32c by default; xxhash, sha256, blake2 since Linux 5.5", BTRFS),
    "metadata_checksums": _c("yes", "every tree block", BTRFS),
    "copy_on_write": _c("yes", "data and metadata (nodatacow per file or mount disables it for data)",
                        BTRFS),
    "journaling": _c("no", "no journal: CoW transactions, plus a log tree for fsync", BTRFS),
    "snapshots": _c("yes", "subvolume snapshots, writable or read-only", "btrfs-subvolume(8)"),
    "scrub": _c("yes", "btrfs scrub verifies checksums; repairs from DUP/RAID copies",
                "btrfs-scrub(8)"),
    "raid": _c("yes", "raid0/1/10/1c3/1c4; raid5/6 documented as unstable", "mkfs.btrfs(8)"),
    "resilvering": _c("partial", "btrfs replace or balance after adding a device; nothing automatic",
                      "btrfs-replace(8)"),
    "online_grow": _c("yes", "btrfs filesystem resize", "btrfs-filesystem(8)"),
    "online_shrink": _c("yes", "btrfs filesystem resize -SIZE", "btrfs-filesystem(8)"),
    "max_file_size": _c("yes", "16 EiB (8 EiB in practice: Linux's loff_t)", BTRFS),
    "max_volume_size": _c("yes", "16 EiB", BTRFS),
    "extents": _c("yes", "extent-based", BTRFS),
    "delayed_allocation": _c("yes", "allocation at writeback", BTRFS),
    "deduplication": _c("partial", "out-of-band only (FIDEDUPERANGE, e.g. duperemove); no in-line "
                        "dedup", "btrfs(5), ioctl_fideduperange(2)"),
    "compression": _c("yes", "mount -o compress=zlib|lzo|zstd (zstd since Linux 4.14)", BTRFS),
    "reflinks": _c("yes", "cp --reflink, FICLONE", BTRFS),
    "fallocate": _c("yes", "preallocated extents (a later overwrite of them is still CoW)", BTRFS),
    "inline_small_files": _c("yes", "files up to max_inline (default 2048 bytes) in the metadata tree",
                             BTRFS),
    "reserved_space": _c("partial", "no root reserve; a global metadata reserve", BTRFS),
    "direct_io": _c("yes", "O_DIRECT (compressed or checksummed cases may fall back to buffered)",
                    BTRFS),
    "trim": _c("yes", "fstrim; discard=async by default since Linux 6.2 on SSDs", BTRFS),
    "tunable_block_size": _c("partial", "sectorsize must match the page size; nodesize 4k..64k",
                             "mkfs.btrfs(8)"),
}

ZFS_FUSE = "zfs(8), zpool(8) of zfs-fuse 0.7.0"
_ZFS_FUSE = {
    "data_checksums": _c("yes", "checksum=on (fletcher4 in pool v23); sha256 optional", ZFS_FUSE),
    "metadata_checksums": _c("yes", "every block pointer carries its child's checksum", ZFS_FUSE),
    "copy_on_write": _c("yes", "always", ZFS_FUSE),
    "journaling": _c("no", "no journal: CoW transaction groups, plus the ZIL for sync writes",
                     ZFS_FUSE),
    "snapshots": _c("yes", "zfs snapshot; in zfs-fuse the .zfs directory does not work, read "
                    "snapshots through zfs clone", "zfs(8); /usr/share/doc/zfs-fuse/STATUS"),
    "scrub": _c("yes", "zpool scrub; self-heals with mirror/raidz or copies>1", ZFS_FUSE),
    "raid": _c("yes", "mirror, raidz1/2/3", ZFS_FUSE),
    "resilvering": _c("yes", "zpool replace/attach resilvers only allocated blocks", ZFS_FUSE),
    "online_grow": _c("yes", "zpool online -e (or autoexpand=on) after the device grows", ZFS_FUSE),
    "online_shrink": _c("no", "vdevs cannot shrink or be removed (pool v23)", ZFS_FUSE),
    "max_file_size": _c("yes", "16 EiB", ZFS_FUSE),
    "max_volume_size": _c("yes", "256 ZiB per pool (2^78 bytes)", ZFS_FUSE),
    "extents": _c("no", "not extents: variable-size blocks up to recordsize", ZFS_FUSE),
    "delayed_allocation": _c("yes", "allocation when the transaction group syncs", ZFS_FUSE),
    "deduplication": _c("yes", "in-line, dedup=on (pool v21+); the dedup table wants lots of RAM",
                        ZFS_FUSE),
    "compression": _c("yes", "compression=on|lzjb|gzip-N|zle (no lz4/zstd before feature flags)",
                      ZFS_FUSE),
    "reflinks": _c("no", "no block cloning before OpenZFS 2.2", ZFS_FUSE),
    "fallocate": _c("no", "fallocate(2) through FUSE is not implemented (EOPNOTSUPP)", ZFS_FUSE),
    "inline_small_files": _c("no", "embedded data needs feature flags (pool v5000)", ZFS_FUSE),
    "reserved_space": _c("partial", "the pool keeps a small share back for its own metadata",
                         ZFS_FUSE),
    "direct_io": _c("partial", "O_DIRECT opens succeed, but data still goes through the ARC",
                    ZFS_FUSE),
    "trim": _c("no", "no TRIM in pool v23 / zfs-fuse", ZFS_FUSE),
    "tunable_block_size": _c("yes", "recordsize=512..128K per dataset; ashift per vdev", ZFS_FUSE),
}

ZFS = "zfsprops(7), zpool-features(7), zpoolprops(7) of OpenZFS 2.x"
_ZFS_KERNEL = {
    **_ZFS_FUSE,
    "data_checksums": _c("yes", "checksum=on (fletcher4); sha256, sha512, skein, edonr, blake3 (2.2)",
                         ZFS),
    "snapshots": _c("yes", "zfs snapshot; readable under .zfs/snapshot", ZFS),
    "online_shrink": _c("partial", "no vdev shrink; top-level mirror/single vdevs can be removed "
                        "(device_removal, 0.8+)", "zpool-remove(8)"),
    "compression": _c("yes", "compression=on (lz4 since 0.6.5 default)|gzip-N|zle|zstd (2.0+)", ZFS),
    "reflinks": _c("partial", "block cloning, OpenZFS 2.2+ (feature@block_cloning); FICLONE works "
                   "within one pool", "zpool-features(7)"),
    "fallocate": _c("partial", "mode 0 accepted since 0.8 but no space is reserved (CoW)",
                    "OpenZFS 0.8 release notes"),
    "inline_small_files": _c("yes", "feature@embedded_data stores blocks that compress to <= 112 "
                             "bytes in the block pointer", "zpool-features(7)"),
    "direct_io": _c("partial", "O_DIRECT bypasses the ARC only since 2.3 (direct=standard)", ZFS),
    "trim": _c("yes", "zpool trim, autotrim=on (0.8+)", "zpool-trim(8)"),
    "tunable_block_size": _c("yes", "recordsize=512..16M (large_blocks) per dataset; ashift per vdev",
                             ZFS),
}


CLAIMS: dict[str, dict[str, Claim]] = {
    "ext2": _EXT2, "ext3": _EXT3, "ext4": _EXT, "xfs": _XFS, "btrfs": _BTRFS,
    "zfs": _ZFS_KERNEL, "zfs-fuse": _ZFS_FUSE,
}

UNKNOWN = Claim("unknown", "no claims recorded for this filesystem yet", "")


def implementation_key(fs: str) -> str:
    """Which table applies here: the driver's implementation (ZFS: kernel OpenZFS or zfs-fuse)."""
    from fslab import filesystems
    try:
        return filesystems.get(fs).implementation()
    except FslabError:   # not a known driver: its own name
        return fs


def claims_for(fs: str, implementation: str | None = None) -> dict[str, Claim]:
    """Every catalog feature's claim for `fs` (UNKNOWN where the table has none)."""
    from fslab.features.catalog import FEATURES
    table = CLAIMS.get(implementation or implementation_key(fs), {})
    return {f.key: table.get(f.key, UNKNOWN) for f in FEATURES}
