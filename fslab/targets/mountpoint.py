"""Existing-mount-point target: measure a filesystem someone else mounted. No root, no mkfs."""
from __future__ import annotations

import os
from pathlib import Path

from fslab.errors import FslabError
from fslab.targets.base import Target
from fslab.system.mounts import mount_holding


def mount_of(path: str) -> dict:
    """The mountinfo entry that holds `path`: mountpoint, fstype, source, options."""
    m = mount_holding(path)
    if m is None:
        raise FslabError(f"{path} is not on any mounted filesystem")
    return {"mountpoint": m.mountpoint, "fstype": m.fstype, "source": m.source,
            "mount_options": m.options, "super_options": m.super_options}


class MountpointTarget(Target):
    kind = "mountpoint"
    provides_device = False

    def __init__(self, directory: str):
        d = Path(directory)
        if not d.is_dir():
            raise FslabError(f"--mountpoint {directory}: not a directory")
        if not os.access(d, os.W_OK):
            raise FslabError(f"--mountpoint {directory}: not writable by this user")
        self.directory = d
        self.mount = mount_of(str(d))

    def acquire(self, size_bytes: int, label: str) -> str:
        raise FslabError("the mountpoint target has no device to format")

    def release(self) -> None:
        pass

    def describe(self) -> dict:
        return {"kind": self.kind, "directory": str(self.directory), **self.mount}
