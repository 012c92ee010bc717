"""Test data the studies need: incompressible, deterministic from a seed, cheap to make.

`Payload` writes file contents: slices of one random pool, with every 4 KiB
block stamped with (file id, block number). Blocks of different files never
match, so no filesystem can compress or deduplicate them by accident; two files
with the same id are byte-identical, which is how the dedup study makes its
duplicates. Producing it is a memcpy, so the CPU it costs is small next to the
filesystem's own.

`FileTree` is study S3's file tree (7,500 files in 900 directories, 1.9 GB,
files of 10 KB to 5 MB at paper scale), generated from a seed.
"""
from __future__ import annotations

import os
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fslab.plan.profiles import MiB, Profile

BLOCK = 4096
# Copy data, as the studies did: since coreutils 9, plain `cp` clones shared extents where
# the filesystem can (XFS, Btrfs: an ISO "copy" in milliseconds)
COPY_DATA = ["cp", "-a", "--reflink=never"]
COPY_MODE = "cp -a --reflink=never: data copied, never a shared-extent clone"
CHUNK = 4 * MiB
POOL_BYTES = 32 * MiB


def dataset_seed(plan_seed: int, name: str, iteration: int) -> int:
    """The seed of a data set: the same for every filesystem of a round, so they all get the same bytes."""
    return zlib.crc32(repr((plan_seed, name, iteration)).encode())


class Payload:
    def __init__(self, seed: int):
        self.seed = seed
        self.pool = np.random.default_rng(seed).integers(0, 256, POOL_BYTES, dtype=np.uint8)

    def chunk(self, file_id: int, offset: int, size: int) -> memoryview:
        """Bytes [offset, offset+size) of file `file_id` (offset a multiple of 4 KiB)."""
        nblocks = -(-size // BLOCK)
        start = zlib.crc32(f"{file_id}:{offset}".encode()) % (POOL_BYTES - nblocks * BLOCK)
        buf = self.pool[start:start + nblocks * BLOCK].copy()
        stamps = buf.view(np.uint64).reshape(nblocks, BLOCK // 8)
        stamps[:, 0] = file_id
        stamps[:, 1] = offset // BLOCK + np.arange(nblocks, dtype=np.uint64)
        stamps[:, 2] = self.seed
        return memoryview(buf)[:size]

    def write(self, path: Path, file_id: int, size: int, fsync: bool = False) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            self.fill(fd, file_id, 0, size)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def fill(self, fd: int, file_id: int, offset: int, size: int, write_bytes: int = CHUNK) -> None:
        """pwrite `size` bytes of file `file_id` at `offset`, sequentially, `write_bytes` at a time."""
        end = offset + size
        while offset < end:
            n = min(write_bytes, end - offset)
            os.pwrite(fd, self.chunk(file_id, offset, n), offset)
            offset += n


@dataclass(frozen=True)
class FileTree:
    """Directories and file sizes of a tree; `paths()` and `sizes` line up."""
    dirs: tuple[str, ...]        # relative paths, parents before children
    files: tuple[str, ...]       # relative paths
    sizes: tuple[int, ...]

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes)

    def materialize(self, root: Path, payload: Payload, threads: int = 2) -> None:
        for d in self.dirs:
            (root / d).mkdir(parents=True, exist_ok=True)
        with ThreadPoolExecutor(threads) as pool:   # writes release the GIL
            list(pool.map(lambda i: payload.write(root / self.files[i], i, self.sizes[i]),
                          range(len(self.files))))


# Study S3's tree at paper scale
S3_FILES, S3_DIRS, S3_BYTES = 7500, 900, 1_900_000_000
S3_MIN_FILE, S3_MAX_FILE = 10_000, 5_000_000


def s3_tree_shape(profile: Profile) -> dict[str, int]:
    """S3's tree scaled by the profile: counts and total scale together; file sizes keep their range."""
    return {"tree_files": profile.count(S3_FILES, minimum=20),
            "tree_dirs": profile.count(S3_DIRS, minimum=3),
            "tree_bytes": round(S3_BYTES * profile.scale) if profile.scaled else S3_BYTES}


def s3_tree(profile: Profile, seed: int, name: str = "tree") -> FileTree:
    shape = s3_tree_shape(profile)
    return file_tree(seed, files=shape["tree_files"], dirs=shape["tree_dirs"],
                     total=shape["tree_bytes"], lo=S3_MIN_FILE, hi=profile.file_size(S3_MAX_FILE),
                     name=name)


def file_tree(seed: int, files: int, dirs: int, total: int, lo: int, hi: int,
              name: str = "tree") -> FileTree:
    rng = np.random.default_rng(seed)
    # a random recursive tree: directory i hangs below one of the directories before it
    parents = [-1] + [int(rng.integers(0, i)) for i in range(1, dirs)]
    paths: list[str] = []
    for i, p in enumerate(parents):
        paths.append(f"{name}/d{i:04d}" if p < 0 else f"{paths[p]}/d{i:04d}")
    where = rng.integers(0, dirs, files)
    sizes = _sizes(rng, files, total, lo, hi)
    names = tuple(f"{paths[w]}/f{i:05d}.dat" for i, w in enumerate(where))
    return FileTree(tuple(paths), names, tuple(int(s) for s in sizes))


def _sizes(rng: np.random.Generator, n: int, total: int, lo: int, hi: int) -> np.ndarray:
    """n sizes in [lo, hi] summing to about `total`: log-uniform skewed toward small files.

    x = lo * (hi/lo) ** (u ** k); k is found by bisection so the mean hits total/n
    (many small files, a few large ones, as on a file server).
    """
    target = min(max(total / n, lo), hi)
    u = rng.random(n)
    ratio = hi / lo

    def mean(k: float) -> float:
        return float(np.mean(lo * ratio ** (u ** k)))

    a, b = 1e-3, 200.0          # mean(k) decreases with k
    for _ in range(60):
        mid = (a * b) ** 0.5
        a, b = (mid, b) if mean(mid) > target else (a, mid)
    sizes = lo * ratio ** (u ** a)
    return np.clip(np.round(sizes), lo, hi).astype(np.int64)
