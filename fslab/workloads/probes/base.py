"""Probe contract and the small helpers every live feature check uses.

A probe answers one question on a fresh, small filesystem: does this feature work
here? `enable(driver)` says how to switch the feature on (mkfs/mount options,
ZFS properties: the driver knows), or returns a sentence saying why this
filesystem has no way to do it. `check(inst)` then exercises the feature and returns a ProbeResult whose
`detail` is the reason a reader sees in the matrix.
"""
from __future__ import annotations

import hashlib
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fslab.filesystems.base import Driver, Enable, Instance
from fslab.system.proc import run
from fslab.records import Measurement

MiB = 1 << 20


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

    def enable(self, driver: Driver) -> Enable | str:
        """How to switch the feature on with this driver, or why it has no mechanism for it."""
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
    """Bytes the filesystem has allocated, once everything written reached its allocator
    (`pool_level`: below dedup, where the filesystem has a pool; Driver.used_bytes)."""
    run(["sync"])
    return inst.driver.used_bytes(inst, pool_level)


def total_bytes(inst: Instance) -> int:
    """Size of the filesystem (ZFS: of the pool), as the filesystem itself reports it."""
    return inst.driver.total_bytes(inst)


def no_mechanism(fs: str, what: str) -> str:
    return f"{fs} has no {what}"
