"""Filesystem driver contract, and `Instance`: one provisioned filesystem.

A driver knows how to make, mount, unmount, cool and measure one filesystem
type. It holds no state about a particular instance; `Instance` does, so that
teardown works the same after success, failure, Ctrl-C, or from `fslab cleanup`.

Adding a filesystem = one new module in this package defining a Driver subclass
and calling `register(...)`.
"""
from __future__ import annotations

import os
import time
from abc import ABC
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fslab.system import state
from fslab.errors import StepFailed
from fslab.plan import FilesystemSpec
from fslab.system.proc import first_line, is_root, run, which
from fslab.system.teardown import is_mounted, umount


@dataclass
class Availability:
    ok: bool
    how: str = ""        # "host kernel", "fuse (zfs-fuse)", "via guest"
    why: str = ""        # when not ok: what is missing
    packages: list[str] = field(default_factory=list)   # Debian packages that would help
    guest: bool = False  # not here, but `fslab run --target guest` can run it (fslab.guest)


def kernel_has(fstype: str) -> bool:
    with open("/proc/filesystems") as f:
        if any(line.split()[-1] == fstype for line in f if line.strip()):
            return True
    # a module not yet loaded still counts if modprobe can find it
    rel = os.uname().release
    return any(Path(f"/lib/modules/{rel}").rglob(f"{fstype}.ko*")) \
        if Path(f"/lib/modules/{rel}").exists() else False


def read_mountinfo(mountpoint: str) -> dict:
    """Options actually in effect for the mount at `mountpoint` (kernel's own view)."""
    from fslab.system.mounts import mount_at
    m = mount_at(mountpoint)
    if m is None:
        return {}
    return {"fstype": m.fstype, "source": m.source, "mount_options": m.options,
            "super_options": m.super_options}


class Driver(ABC):
    name: str = "?"
    fstype: str = "?"            # the kernel's name for it (mount -t)
    mkfs_tool: str | None = None
    packages: list[str] = []     # Debian packages providing its tools
    needs_device: bool = True
    min_bytes: int = 0           # smallest image mkfs accepts
    # filesystem-specific kernel interfaces a workload may need (e.g. fio's e4defrag engine)
    ioctls: frozenset[str] = frozenset()

    # --- what can run here -------------------------------------------------
    def available(self) -> Availability:
        if not is_root():
            return Availability(False, why="needs root (or use --mountpoint DIR)",
                                packages=self.packages)
        if self.mkfs_tool and not which(self.mkfs_tool):
            return Availability(False, why=f"{self.mkfs_tool} not installed "
                                f"(apt-get install {' '.join(self.packages)})",
                                packages=self.packages)
        if not kernel_has(self.fstype):
            return Availability(False, why=f"host kernel has no {self.fstype} support",
                                packages=self.packages)
        return Availability(True, how="host kernel")

    def implementation(self) -> str:
        """Which implementation of this filesystem runs here (keys the feature-claims table);
        drivers with more than one (ZFS: kernel OpenZFS or zfs-fuse) override it."""
        return self.name

    def implementation_label(self) -> str:
        """The implementation and its version, for environments and report headers."""
        return self.implementation()

    def versions(self) -> dict[str, str]:
        out = {}
        if self.mkfs_tool:
            v = first_line([self.mkfs_tool, "-V"])
            if v:
                out[self.mkfs_tool] = v
        return out

    # --- lifecycle ---------------------------------------------------------
    def mkfs(self, inst: "Instance") -> None:
        run([self.mkfs_tool, *self.mkfs_args(inst.spec), *inst.spec.mkfs_options, inst.devices[0]],
            timeout=1800)

    def mkfs_args(self, spec: FilesystemSpec) -> list[str]:
        """Arguments that make mkfs non-interactive (before the user's own options)."""
        return []

    def mount(self, inst: "Instance") -> None:
        argv = ["mount", "-t", self.fstype]
        if inst.spec.mount_options:
            argv += ["-o", ",".join(inst.spec.mount_options)]
        run(argv + [inst.devices[0], str(inst.mountpoint)])

    def after_mount(self, inst: "Instance") -> dict:
        """Wait for background work that would disturb measurements; say what was done."""
        return {}

    def unmount(self, inst: "Instance") -> None:
        umount(str(inst.mountpoint))

    def destroy(self, inst: "Instance") -> None:
        """Undo mkfs-level state beyond the device (ZFS pools). Idempotent."""

    def cold_cache(self, inst: "Instance") -> dict:
        """Empty every cache between the files and the device; return evidence it worked."""
        run(["sync"])
        self.unmount(inst)
        drop_caches()
        self.mount(inst)
        return {"method": "umount+mount+drop_caches", "mounted": is_mounted(str(inst.mountpoint))}

    def effective_options(self, inst: "Instance") -> dict:
        return read_mountinfo(str(inst.mountpoint))

    # --- where the filesystem's work and caching happen ----------------------
    def serving_daemon(self) -> tuple[str, int] | None:
        """The user-space process doing this filesystem's work (a FUSE daemon) as
        (name, pid), or None when the kernel does it. Its CPU is the filesystem's CPU."""
        return None

    def recover_after_hang(self, inst: "Instance") -> str | None:
        """A unit's process hung in this filesystem and was killed (its FUSE connection
        aborted): make sure the filesystem can be torn down and the next unit gets a
        working one (a FUSE driver replaces a daemon that no longer answers); say what
        was done, or None when there was nothing to do."""
        return None

    def keep_data_uncached(self, inst: "Instance") -> str | None:
        """For page cache off where O_DIRECT is refused: stop the filesystem's own data
        cache, if it has one besides the page cache; say what was done."""
        return None

    def capacity(self, inst: "Instance") -> dict:
        st = os.statvfs(inst.mountpoint)
        return {"total_bytes": st.f_blocks * st.f_frsize,
                "free_bytes": st.f_bfree * st.f_frsize,
                "avail_bytes": st.f_bavail * st.f_frsize,
                "used_bytes": (st.f_blocks - st.f_bfree) * st.f_frsize,
                "files": st.f_files, "files_free": st.f_ffree}

    def check(self, inst: "Instance") -> dict:
        """Run the filesystem checker read-only on the unmounted device: {'clean': bool, 'output': str}."""
        return {"clean": None, "output": "no checker for " + self.name}

    def features(self) -> dict[str, Any]:
        """Claims for the feature matrix: {feature: {status, note, ref}}. They all live in
        one table, fslab/features/claims.py (ZFS: kernel OpenZFS or zfs-fuse, whichever runs)."""
        from fslab.features.claims import claims_for
        return {key: c.as_dict() for key, c in claims_for(self.name).items()}


class Existing(Driver):
    """A filesystem someone else mounted (--mountpoint): fslab only measures it."""
    needs_device = False

    def __init__(self, fstype: str):
        self.name = self.fstype = fstype
        from fslab import filesystems   # the same kernel interfaces as fslab's own driver of it
        from fslab.errors import FslabError
        try:
            self.ioctls = filesystems.get(fstype).ioctls
        except FslabError:              # a filesystem fslab has no driver for
            self.ioctls = frozenset()

    def available(self) -> Availability:
        return Availability(True, how="existing mount point")

    def mkfs(self, inst: "Instance") -> None:
        raise StepFailed("an existing mount point is never formatted")


def drop_caches() -> None:
    run(["sync"])
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


class Instance:
    """One filesystem on its target: acquire -> mkfs -> mount -> ... -> close.

    Each step is explicit so suites like the file-server tasks can time mkfs and
    mount on their own; `with inst:` does all of them. close() is idempotent and
    undoes whatever was done, in reverse.
    """

    def __init__(self, driver: Driver, spec: FilesystemSpec, target, workdir: Path,
                 label: str, size_bytes: int):
        self.driver, self.spec, self.target = driver, spec, target
        self.workdir = Path(workdir)
        self.label = label
        self.size_bytes = max(size_bytes, driver.min_bytes)
        self.devices: list[str] = []
        self.mountpoint = self.workdir / f"mnt-{label}"
        self.pool: str | None = None      # ZFS pool name when there is one
        self.made = False
        self.info: dict[str, Any] = {}    # what happened: lazy init, options in effect...

    # steps ---------------------------------------------------------------
    def acquire(self) -> None:
        if self.driver.needs_device and not self.devices:
            for i in range(self.spec.devices):
                self.devices.append(self.target.acquire(self.size_bytes, f"{self.label}-d{i}"))

    def mkfs(self) -> None:
        self.acquire()
        self.driver.mkfs(self)
        self.made = True

    def mount(self) -> None:
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        state.note("mount", str(self.mountpoint))
        self.driver.mount(self)
        self.info.update(self.driver.after_mount(self))

    def unmount(self) -> None:
        if is_mounted(str(self.mountpoint)) or self.pool:
            self.driver.unmount(self)
        if is_mounted(str(self.mountpoint)):
            # e.g. a FUSE mount whose daemon died: the driver cannot see it any more
            umount(str(self.mountpoint))
        state.forget("mount", str(self.mountpoint))

    def close(self) -> None:
        errors = []
        for step in (self.unmount, lambda: self.driver.destroy(self)):
            try:
                step()
            except Exception as e:   # keep tearing down; report at the end
                errors.append(str(e))
        if not errors:
            # Only release devices once nothing uses them: detaching a loop device
            # under a live pool leaves a FAULTED pool. On error they stay noted in
            # the state file, and `fslab cleanup` tears them down in order.
            try:
                self.target.release()
            except Exception as e:
                errors.append(str(e))
        try:
            if self.mountpoint.exists() and not is_mounted(str(self.mountpoint)):
                self.mountpoint.rmdir()
        except OSError:
            pass
        self.devices.clear()
        if errors:
            raise StepFailed("teardown: " + "; ".join(errors))

    # convenience ---------------------------------------------------------
    def __enter__(self) -> "Instance":
        try:
            self.mkfs()
            self.mount()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def cold_cache(self) -> dict:
        t = time.perf_counter()
        ev = self.driver.cold_cache(self)
        ev["seconds"] = time.perf_counter() - t
        return ev

    def effective(self) -> dict:
        """Everything about this instance worth recording with its results."""
        return {"fs": self.driver.name, "variant": self.spec.variant,
                "mkfs_options": self.spec.mkfs_options, "mount_options": self.spec.mount_options,
                "properties": self.spec.properties, "devices": list(self.devices),
                "image_bytes": self.size_bytes, "target": self.target.describe(),
                "in_effect": self.driver.effective_options(self),
                **self.info}
