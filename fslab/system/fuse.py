"""FUSE connections: abort the one serving a directory, so a hung daemon answers with errors."""
from __future__ import annotations

import contextlib
from pathlib import Path

from fslab.system.mounts import is_mounted, mounts, resolved_above
from fslab.system.proc import run


def abort_fuse(directory: str) -> bool:
    """Abort the FUSE connection serving `directory`, if it is one (a hung daemon then
    answers every waiting request with an error instead of never). The mount is found in
    the kernel's mount table, never by stat(): a stat of a hung FUSE mount waits forever."""
    path = resolved_above(directory)
    held = None   # the deepest mount holding it (the last one, if stacked)
    for m in mounts():
        if m.holds(path) and (held is None or len(m.mountpoint) >= len(held.mountpoint)):
            held = m
    if held is None:
        return False
    major, minor = held.device
    if major != 0 or not held.fstype.startswith("fuse"):
        return False
    with fusectl() as connections:
        try:
            (connections / str(minor) / "abort").write_text("1")
            return True
        except OSError:
            return False


@contextlib.contextmanager
def fusectl():
    """/sys/fs/fuse/connections, mounted for the while if it is not (no systemd here to
    have mounted it): fslab leaves no mount of its own behind."""
    path = Path("/sys/fs/fuse/connections")
    mounted_here = False
    if path.is_dir() and not is_mounted(str(path)):
        mounted_here = run(["mount", "-t", "fusectl", "fusectl", str(path)], check=False,
                           timeout=30).ok
    try:
        yield path
    finally:
        if mounted_here:
            run(["umount", str(path)], check=False, timeout=30)
