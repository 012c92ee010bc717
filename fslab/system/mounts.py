"""The kernel's mount table (/proc/self/mountinfo), read in one place.

Mount points are decoded (the kernel writes a space as \\040, a tab as \\011, a
newline as \\012, a backslash as \\134): compared raw, a mount at "/tmp/a b" reads
as unmounted, and a cleanup that believes it would rmtree into a live filesystem.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

MOUNTINFO = "/proc/self/mountinfo"
_ESCAPE = re.compile(r"\\([0-7]{3})")


@dataclass(frozen=True)
class Mount:
    mountpoint: str
    device: tuple[int, int]    # st_dev of the mounted filesystem (major, minor)
    fstype: str
    source: str
    options: str               # per-mount options (rw,noatime,...)
    super_options: str         # the filesystem's own options

    def holds(self, path: str) -> bool:
        """Is `path` (already resolved) this mount point or below it?"""
        return path == self.mountpoint or path.startswith(self.mountpoint.rstrip("/") + "/")


def unescape(field: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse(text: str) -> list[Mount]:
    out = []
    for line in text.splitlines():
        pre, sep, post = line.partition(" - ")
        fields = pre.split()
        if not sep or len(fields) < 6:
            continue
        fstype, source, super_opts = (post.split() + ["", "", ""])[:3]
        major, _, minor = fields[2].partition(":")
        out.append(Mount(unescape(fields[4]), (int(major), int(minor)), fstype, unescape(source),
                         fields[5], super_opts))
    return out


def mounts() -> list[Mount]:
    with open(MOUNTINFO) as f:
        return parse(f.read())


def mount_at(path: str) -> Mount | None:
    """The mount whose mount point is exactly `path` (the last one, if stacked). Only the
    parent is resolved: resolving the mount point itself stats it, which waits forever
    on a FUSE mount whose daemon hangs."""
    real = resolved_above(path)
    hits = [m for m in mounts() if m.mountpoint == real]
    return hits[-1] if hits else None


def resolved_above(path: str) -> str:
    """`path` with the directories above it resolved (symlinks, ..), never the path itself."""
    parent, name = os.path.split(os.path.abspath(path))
    return os.path.join(os.path.realpath(parent), name)


def is_mounted(path: str) -> bool:
    return mount_at(path) is not None


def mount_holding(path: str) -> Mount | None:
    """The mount that holds `path`: the longest mount point above it (the last if stacked)."""
    real = os.path.realpath(path)
    best = None
    for m in mounts():
        if m.holds(real) and (best is None or len(m.mountpoint) >= len(best.mountpoint)):
            best = m
    return best


def mounted_under(directory: str) -> list[str]:
    """Mount points at or below `directory`, deepest first (the order to unmount them)."""
    top = Mount(os.path.realpath(directory), (0, 0), "", "", "", "")
    return sorted({m.mountpoint for m in mounts() if top.holds(m.mountpoint)}, key=len,
                  reverse=True)
