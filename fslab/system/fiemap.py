"""Where a file's bytes live on the device: FS_IOC_FIEMAP from Python, and a layout score.

The kernel fills `struct fiemap` with the file's extents; we call it from Python
(fcntl.ioctl + struct) so there is no filefrag output to parse. Filesystems without
FIEMAP (zfs-fuse, tmpfs) raise `FiemapUnsupported`: callers must say "not
measurable" rather than invent a number.

Note: btrfs reports its own *logical* addresses, not offsets on a device; they
are contiguous where the on-device bytes are (within a chunk), so the layout score
is meaningful, but they are not image offsets.
"""
from __future__ import annotations

import errno
import fcntl
import os
import struct
from dataclasses import dataclass
from typing import Iterable

FS_IOC_FIEMAP = 0xC020660B            # _IOWR('f', 11, struct fiemap)
FIEMAP_FLAG_SYNC = 0x1                # flush dirty data first, so delalloc is resolved
_HEADER = struct.Struct("=QQIIII")     # fm_start, fm_length, fm_flags, mapped, count, reserved
_EXTENT = struct.Struct("=QQQQQIIII")  # logical, physical, length, 2x reserved64, flags, 3x reserved
BATCH = 256

EXTENT_LAST = 0x1
EXTENT_UNKNOWN = 0x2          # location not known (e.g. not yet allocated)
EXTENT_DELALLOC = 0x4
EXTENT_ENCODED = 0x8          # compressed/encrypted: physical bytes are not the file's bytes
EXTENT_NOT_ALIGNED = 0x100
EXTENT_DATA_INLINE = 0x200    # stored inside metadata: no block of its own
EXTENT_UNWRITTEN = 0x800
NO_BLOCKS = EXTENT_UNKNOWN | EXTENT_DELALLOC | EXTENT_DATA_INLINE


class FiemapUnsupported(OSError):
    """The filesystem does not implement FIEMAP."""


@dataclass(frozen=True)
class Extent:
    logical: int     # byte offset in the file
    physical: int    # byte offset on the device (btrfs: its logical address space)
    length: int      # bytes
    flags: int

    @property
    def has_blocks(self) -> bool:
        return not self.flags & NO_BLOCKS


def extents(path: str) -> list[Extent]:
    """Every extent of the file at `path`, in file order."""
    out: list[Extent] = []
    start = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            buf = bytearray(_HEADER.pack(start, (1 << 64) - 1 - start, FIEMAP_FLAG_SYNC, 0, BATCH, 0)
                            + bytes(_EXTENT.size * BATCH))
            try:
                fcntl.ioctl(fd, FS_IOC_FIEMAP, buf, True)
            except OSError as e:
                if e.errno in (errno.ENOTTY, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                    raise FiemapUnsupported(e.errno, f"FIEMAP not supported: {e.strerror}", path) from None
                raise
            mapped = _HEADER.unpack_from(buf)[3]
            if mapped == 0:
                return out
            for i in range(mapped):
                f = _EXTENT.unpack_from(buf, _HEADER.size + i * _EXTENT.size)
                out.append(Extent(f[0], f[1], f[2], f[5]))
            last = out[-1]
            if last.flags & EXTENT_LAST:
                return out
            start = last.logical + last.length
    finally:
        os.close(fd)


def supported(path: str) -> bool:
    try:
        extents(path)
        return True
    except FiemapUnsupported:
        return False


def physical_offset(exts: list[Extent], logical: int) -> int | None:
    """Device offset of the file byte at `logical`, if it sits in a real block."""
    for e in exts:
        if e.logical <= logical < e.logical + e.length and e.has_blocks:
            return e.physical + (logical - e.logical)
    return None


@dataclass
class Layout:
    blocks: int          # 4 KiB blocks read, in order
    contiguous: int      # of the (blocks - 1) steps between them, how many were +1 block
    files: int
    inline_files: int    # files with no blocks of their own (inline/empty)

    @property
    def score(self) -> float | None:
        """1.0 = the whole read is one sequential sweep; None if there is nothing to score."""
        return self.contiguous / (self.blocks - 1) if self.blocks > 1 else None


def layout(paths: Iterable[str], block: int = 4096) -> Layout:
    """Conway et al.'s layout score over files read in the given order.

    Walk every block of every file in read order; a step from one block to the
    next is contiguous when the next block starts where the previous one ended.
    Raises FiemapUnsupported on the first file the filesystem cannot map.
    """
    blocks = contiguous = files = inline = 0
    prev_end: int | None = None
    for p in paths:
        files += 1
        exts = [e for e in extents(p) if e.has_blocks and e.length]
        if not exts:
            inline += 1
            continue
        for e in exts:
            n = (e.length + block - 1) // block
            if prev_end is not None and e.physical == prev_end:
                contiguous += 1
            blocks += n
            contiguous += n - 1
            prev_end = e.physical + e.length
    return Layout(blocks, contiguous, files, inline)


def read_order(root: str) -> list[str]:
    """Regular files under root in the order `grep -r` visits them (readdir order, depth first)."""
    out: list[str] = []

    def walk(d: str) -> None:
        try:
            entries = list(os.scandir(d))
        except OSError:
            return
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                walk(e.path)
            elif e.is_file(follow_symlinks=False):
                out.append(e.path)
    walk(root)
    return out
