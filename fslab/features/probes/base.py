"""Probe contract and the small helpers every live feature check uses.

A probe answers one question on a fresh, small filesystem: does this feature work
here? `enable(fs, impl)` says how to switch the feature on (mkfs/mount options,
ZFS properties), or returns a sentence saying why this filesystem has no way to
do it. `check(inst)` then exercises the feature and returns a ProbeResult whose
`detail` is the reason a reader sees in the matrix.
"""
from __future__ import annotations

import hashlib
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fslab.filesystems.base import Instance
from fslab.system.proc import run
from fslab.records import Measurement

MiB = 1 << 20


@dataclass
class Enable:
    """Options that switch a feature on for the probe's filesystem (merged into the spec)."""
    mkfs_options: list[str] = field(default_factory=list)
    mount_options: list[str] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        bits = [*(["mkfs " + " ".join(self.mkfs_options)] if self.mkfs_options else []),
                *(["-o " + ",".join(self.mount_options)] if self.mount_options else []),
                *(f"{k}={v}" for k, v in self.properties.items())]
        return "; ".join(bits) or "defaults"


@dataclass
class ProbeResult:
    works: bool | None          # None: the probe could not tell (detail says why)
    detail: str
    evidence: dict[str, Any] = field(default_factory=dict)
    metrics: list[Measurement] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        return {True: "works", False: "fails", None: "inconclusive"}[self.works]


class Probe:
    name: str = "?"
    feature: str = "?"           # catalog key
    image_bytes: int = 0         # 0: the profile's minimum loop image

    def enable(self, fs: str, impl: str) -> Enable | str:
        """How to switch the feature on for `fs`, or why it has no mechanism for it."""
        return Enable()

    def check(self, inst: Instance) -> ProbeResult:
        raise NotImplementedError


# --- helpers --------------------------------------------------------------------
def random_bytes(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


def compressible_bytes(n: int, seed: int) -> bytes:
    """Log-like text: each line repeats the previous one's shape with a few digits changed,
    so even a short-window compressor (lzjb) finds matches."""
    rng = random.Random(seed)
    levels = (b"INFO", b"DEBUG", b"WARN")
    out, size, i = [], 0, 0
    while size < n:
        line = (b"2024-05-01T12:%02d:%02d host=storage-01 level=%s request id=%06d path=/data/files "
                b"status=200 bytes=%d elapsed_ms=%d\n" % (i // 60 % 60, i % 60, rng.choice(levels), i,
                                                            rng.randint(100, 999), rng.randint(1, 99)))
        out.append(line)
        size += len(line)
        i += 1
    return b"".join(out)[:n]


def write_file(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(MiB), b""):
            h.update(chunk)
    return h.hexdigest()


def used_bytes(inst: Instance, pool_level: bool = False) -> int:
    """Bytes the filesystem has allocated, once everything written reached its allocator.

    ZFS accounts at transaction-group sync, so poll until two readings agree. The
    dataset's `used` counts compressed bytes; only the pool's `allocated` shows dedup
    savings (`pool_level`). zfs-fuse has no `zpool -p`, so pool sizes are parsed from
    the human form (3 significant digits; enough for the probes' MiB-sized checks).
    """
    run(["sync"])
    if inst.pool:
        read = ((lambda: parse_human(_zpool_get(inst.pool, "allocated"))) if pool_level else
                (lambda: int(run(["zfs", "get", "-Hp", "-o", "value", "used", inst.pool]).stdout)))
        last = -1
        for _ in range(40):
            now = read()
            if now == last:
                return now
            last = now
            time.sleep(0.5)
        return last
    if inst.driver.name == "btrfs":   # commit the transaction so the chunk accounting is current
        run(["btrfs", "filesystem", "sync", str(inst.mountpoint)])
    st = os.statvfs(inst.mountpoint)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def total_bytes(inst: Instance) -> int:
    """Size of the filesystem (ZFS: of the pool), as the filesystem itself reports it."""
    if inst.pool:
        return parse_human(_zpool_get(inst.pool, "size"))
    st = os.statvfs(inst.mountpoint)
    return st.f_blocks * st.f_frsize


def _zpool_get(pool: str, prop: str) -> str:
    # `zpool list -H -o` works in zfs-fuse and OpenZFS alike (`zpool get -o` does not)
    return run(["zpool", "list", "-H", "-o", prop, pool]).stdout.strip()


def parse_human(text: str) -> int:
    """'604K', '16.3M', '1.2G', '512' (zpool's binary suffixes) -> bytes."""
    text = text.strip().rstrip("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
    if text and text[-1].upper() in scale:
        return int(float(text[:-1]) * scale[text[-1].upper()])
    return int(float(text))


def no_mechanism(fs: str, what: str) -> str:
    return f"{fs} has no {what}"
