"""Block-device target: a real (or loop) device the user offers for destruction.

The guard refuses, before touching anything, a device that is mounted, holds any
filesystem/partition signature, or backs / or /boot, unless the user repeats the
device's name in --destroy-data. The refusal is one line and exit code 2.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from fslab.errors import RefusedError
from fslab.system.proc import run
from fslab.targets.base import Target
from fslab.system.mounts import mounts


def _dev_numbers(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return os.major(st.st_rdev), os.minor(st.st_rdev)


def _holders_and_parts(dev: str) -> list[str]:
    """The device plus its partitions (a signature on any of them counts)."""
    name = os.path.basename(os.path.realpath(dev))
    sysfs = Path("/sys/class/block") / name
    parts = [f"/dev/{p.name}" for p in sysfs.iterdir() if (p / "partition").exists()] \
        if sysfs.exists() else []
    return [dev, *parts]


def _backs_system(dev: str) -> str | None:
    """Which of / and /boot this device (or a partition of it) backs, if any."""
    major_minor = {_dev_numbers(d) for d in _holders_and_parts(dev) if os.path.exists(d)}
    for mnt in ("/", "/boot"):
        if not os.path.exists(mnt):
            continue
        st = os.stat(mnt)
        if (os.major(st.st_dev), os.minor(st.st_dev)) in major_minor:
            return mnt
        # / on a stacked device (dm, md): compare slaves
        r = run(["findmnt", "-n", "-o", "SOURCE", mnt], check=False)
        src = r.stdout.strip()
        if src.startswith("/dev/") and os.path.exists(src):
            name = os.path.basename(os.path.realpath(src))
            slaves = Path(f"/sys/class/block/{name}/slaves")
            if slaves.exists() and any(_dev_numbers(f"/dev/{s.name}") in major_minor
                                       for s in slaves.iterdir() if os.path.exists(f"/dev/{s.name}")):
                return mnt
    return None


def _mounted_parts(dev: str) -> list[str]:
    wanted = {_dev_numbers(d) for d in _holders_and_parts(dev) if os.path.exists(d)}
    return [m.mountpoint for m in mounts() if m.device in wanted]


def _signatures(dev: str) -> list[str]:
    found = []
    for d in _holders_and_parts(dev):
        r = run(["wipefs", "--no-act", "--noheadings", "-o", "TYPE", d], check=False)
        found += [f"{t} on {d}" for t in r.stdout.split() if t]
        if not r.ok and not r.stdout:
            r = run(["blkid", "-p", "-o", "value", "-s", "TYPE", d], check=False)
            found += [f"{t} on {d}" for t in r.stdout.split() if t]
    return found


def check_destroyable(dev: str, destroy_data: str | None) -> None:
    """Raise RefusedError unless `dev` is safe to format (or the user confirmed by name)."""
    if not os.path.exists(dev) or not stat.S_ISBLK(os.stat(dev).st_mode):
        raise RefusedError(f"refusing {dev}: not a block device")
    confirmed = destroy_data is not None and \
        os.path.realpath(destroy_data) == os.path.realpath(dev)
    system = _backs_system(dev)
    if system:   # never, even when confirmed
        raise RefusedError(f"refusing {dev}: it backs {system}")
    mounted = _mounted_parts(dev)
    if mounted:
        raise RefusedError(f"refusing {dev}: mounted at {', '.join(mounted)}; unmount it first")
    if confirmed:
        return
    sigs = _signatures(dev)
    if sigs:
        raise RefusedError(f"refusing {dev}: it holds data ({'; '.join(sigs)}); "
                           f"to destroy it, pass --destroy-data={dev}")
    raise RefusedError(f"refusing {dev}: formatting destroys its contents; "
                       f"to confirm, pass --destroy-data={dev}")


class DeviceTarget(Target):
    kind = "device"

    def __init__(self, device: str, destroy_data: str | None):
        check_destroyable(device, destroy_data)
        self.device = device
        self._in_use = False

    def acquire(self, size_bytes: int, label: str) -> str:
        if self._in_use:
            raise RefusedError(f"{self.device} is already in use by this run (one device only)")
        self._in_use = True
        return self.device

    def release(self) -> None:
        self._in_use = False

    def describe(self) -> dict:
        name = os.path.basename(os.path.realpath(self.device))
        info = {"kind": self.kind, "device": self.device}
        for key, rel in (("model", "device/model"), ("rotational", "queue/rotational"),
                         ("size_sectors", "size")):
            p = Path(f"/sys/class/block/{name}/{rel}")
            if p.exists():
                info[key] = p.read_text().strip()
        return info
