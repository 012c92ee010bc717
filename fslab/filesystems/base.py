"""Filesystem driver contract, and `Instance`: one provisioned filesystem.

A driver knows how to make, mount, unmount, cool and measure one filesystem
type. It holds no state about a particular instance; `Instance` does, so that
teardown works the same after success, failure, Ctrl-C, or from `fslab cleanup`.

Adding a filesystem = one new module in this package defining a Driver subclass
and calling `register(...)`. Everything that differs between filesystems (how to
scrub, snapshot, grow, read error counters, switch on compression...) is a method
or property here with the generic behaviour, overridden by the drivers that differ:
code outside this package asks the driver, never which filesystem it is.
"""
from __future__ import annotations

import os
import time
from abc import ABC
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fslab.system import state
from fslab.errors import StepFailed, FslabError
from fslab.plan import FilesystemSpec
from fslab.system.proc import first_line, is_root, run, which
from fslab.system.teardown import is_mounted, umount
from fslab.system.mounts import mount_at
from fslab import filesystems


@dataclass
class Availability:
    ok: bool
    how: str = ""        # "host kernel", "fuse (zfs-fuse)", "via guest"
    why: str = ""        # when not ok: what is missing
    packages: list[str] = field(default_factory=list)   # Debian packages that would help
    guest: bool = False  # not here, but `fslab run --target guest` can run it (fslab.guest)


@dataclass(frozen=True)
class FeatureClaim:
    """What a filesystem's own documentation says about one catalog feature."""
    status: str          # "yes" | "no" | "partial"
    note: str            # versions, defaults, limits
    ref: str             # the tool's own documentation

    def as_dict(self) -> dict:
        return {"status": self.status, "note": self.note, "ref": self.ref}


@dataclass
class Enable:
    """Options that switch a feature on (merged into the filesystem's spec before mkfs)."""
    mkfs_options: list[str] = field(default_factory=list)
    mount_options: list[str] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        bits = [*(["mkfs " + " ".join(self.mkfs_options)] if self.mkfs_options else []),
                *(["-o " + ",".join(self.mount_options)] if self.mount_options else []),
                *(f"{k}={v}" for k, v in self.properties.items())]
        return "; ".join(bits) or "defaults"


UNKNOWN = FeatureClaim("unknown", "no claims recorded for this filesystem yet", "")

#: the places an option goes: mkfs's arguments, mount -o, zfs create -O, zpool create -o
OPTION_KINDS = ("mkfs", "mount", "property", "pool_property")
SAFETY = ("safe", "trade")


@dataclass(frozen=True)
class Option:
    """One entry of a driver's option catalogue: a setting that matters for performance,
    the values worth trying (each as typed: "data=writeback", "noatime", "-I 512",
    "recordsize=8k") and what choosing one costs. `safety` is "safe" (no durability or
    feature cost) or "trade", and then `trades` says what is given up, in words."""
    key: str
    kind: str                          # one of OPTION_KINDS
    values: tuple[str, ...]
    safety: str                        # one of SAFETY
    effect: str                        # what it changes, in words
    source: str                        # the documentation that describes it
    trades: str = ""                   # for "trade": what it gives up
    #: () = every implementation of the driver; else only these (ZFS: "zfs" for OpenZFS)
    implementations: tuple[str, ...] = ()
    #: how /proc/self/mountinfo lists a value typed otherwise ("barrier=0" -> "nobarrier")
    shows_as: tuple[tuple[str, str], ...] = ()
    #: keys of the same catalogue this one does not go with (fslab decide combines one of them)
    conflicts: tuple[str, ...] = ()

    def spec_fields(self, value: str) -> dict[str, Any]:
        """The [[filesystem]] keys that set `value` (merged into a variant's own)."""
        import shlex
        if self.kind == "mkfs":
            return {"mkfs_options": shlex.split(value)}
        if self.kind == "mount":
            return {"mount_options": [value]}
        key, _, val = value.partition("=")
        return {"properties" if self.kind == "property" else "pool_properties": {key: val}}

    def shown_as(self, value: str) -> str:
        return dict(self.shows_as).get(value, value)


# mount options the kernel's VFS (or most filesystems) share, for the drivers' catalogues
ATIME = Option("noatime", "mount", ("noatime",), "safe",
               "reads no longer write the inode's access time (relatime, the default, still "
               "writes it once a day)", "mount(8)")
LAZYTIME = Option("lazytime", "mount", ("lazytime",), "trade",
                  "timestamps are kept in memory and written with other inode updates",
                  "mount(8)", trades="a crash loses timestamp updates up to 24 h old")


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
    holds_files: bool = True     # False: the bare device (raw), no files to write
    min_bytes: int = 0           # smallest image mkfs accepts
    # filesystem-specific kernel interfaces a workload may need (e.g. fio's e4defrag engine)
    ioctls: frozenset[str] = frozenset()
    #: what its documentation claims per catalog feature, keyed by implementation()
    #: (most drivers have one implementation: their name); {} = nothing recorded yet
    feature_claims: dict[str, dict[str, FeatureClaim]] = {}
    #: the options worth trying for performance (`Option`), every implementation's; ask
    #: option_catalogue() for the ones that run here
    catalogue: tuple[Option, ...] = ()
    #: how people call each implementation() key, where a driver has several
    implementation_names: dict[str, str] = {}
    #: takes ZFS-style dataset/pool properties (a plan's `properties`, --fs's -p and -P)
    takes_properties: bool = False
    #: mkfs + mount on a scratch image can check its options (not the bare device)
    probe_options: bool = True

    def option_catalogue(self, implementation: str | None = None) -> list[Option]:
        """The catalogue entries valid for `implementation` (default: the one here)."""
        impl = implementation or self.implementation()
        return [o for o in self.catalogue if not o.implementations or impl in o.implementations]

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

    def apply_commands(self, spec: FilesystemSpec, device: str = "/dev/DEVICE",
                       mountpoint: str = "/srv/data") -> list[str]:
        """What a person types to make this variant on a real device: mkfs with the
        variant's own options, mount, and an fstab line (`fslab decide`'s answer)."""
        import shlex
        opts = ",".join(spec.mount_options) or "defaults"
        mkfs = [self.mkfs_tool or f"mkfs.{self.fstype}", *spec.mkfs_options, device]
        return [" ".join(shlex.quote(w) for w in mkfs),
                f"mount -t {self.fstype}" + (f" -o {shlex.quote(opts)}" if spec.mount_options else "")
                + f" {device} {mountpoint}",
                f"fstab: {device} {mountpoint} {self.fstype} {opts} 0 2"]

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

    # --- what differs between filesystems, asked by suites and probes -----------
    #: why a device-mapper target (the crash suite's dm-flakey) cannot sit under it, or None
    dm_refusal: str | None = None

    def forget_after_power_cut(self, inst: "Instance") -> None:
        """After a power cut (the device drops every write) and the unmount: drop any state
        kept beyond the mount, so the next mount recovers from what the disk holds. The
        kernel's filesystems keep none; a ZFS pool stays imported after its unmount."""
    #: check() runs on the mounted filesystem (ZFS: a scrub) instead of the unmounted device
    checks_online: bool = False
    #: directory entries are findable by scanning the image (not compressed, as ZFS metadata is)
    metadata_scannable: bool = True
    #: damaged metadata can hang a service other users share (zfs-fuse's one daemon): the
    #: integrity suite then damages unscannable metadata only when the plan asks for it
    metadata_damage_hangs_others: bool = False
    #: the command online_grow runs, as shown in reports; None: fslab knows none
    grow_tool: str | None = None

    def held(self, inst: "Instance") -> bool:
        """Is there anything for unmount() to undo (a mount, or a pool still imported)?"""
        return is_mounted(str(inst.mountpoint))

    def sync_metadata(self, inst: "Instance") -> None:
        """After a sync: make space accounting current (btrfs commits its transaction)."""

    def used_bytes(self, inst: "Instance", pool_level: bool = False) -> int:
        """Bytes allocated once everything written reached the allocator (`pool_level`:
        counted below dedup, where a pool has a level of its own)."""
        self.sync_metadata(inst)
        st = os.statvfs(inst.mountpoint)
        return (st.f_blocks - st.f_bfree) * st.f_frsize

    def total_bytes(self, inst: "Instance") -> int:
        """Size of the filesystem as it reports it itself (ZFS: of the pool)."""
        st = os.statvfs(inst.mountpoint)
        return st.f_blocks * st.f_frsize

    def error_counters(self, inst: "Instance") -> dict[str, Any]:
        """The filesystem's own error counters, keyed by where they come from ({} if none)."""
        return {}

    def scrub(self, inst: "Instance") -> dict[str, Any] | None:
        """Run the online scrub and wait for it; None when the filesystem has none."""
        return None

    def export_for_offline(self, inst: "Instance", check: bool = True) -> None:
        """After unmount: let go of what still holds data above the devices, so the image
        is complete and the next mount reads it from there (ZFS exports its pool)."""

    def physical_locations(self, inst: "Instance", fiemap_offset: int) -> set[tuple[int, int]]:
        """Where FIEMAP's physical offset is on the devices, as {(device index, offset)}:
        the first device as is, unless FIEMAP speaks in the filesystem's own address space."""
        return {(0, fiemap_offset)}

    def metadata_locations(self, inst: "Instance", obj: int) -> list[tuple[int, int]]:
        """Where directory inode `obj`'s blocks are, for filesystems whose metadata is not
        found by scanning the image (metadata_scannable False), read from the exported pool."""
        raise StepFailed(f"{self.name}: fslab cannot locate metadata blocks by object")

    def grow_command(self, inst: "Instance") -> list[str] | None:
        """The online-grow command after the device under it grew (None: none known)."""
        return None

    def grow_failure_hint(self) -> str:
        """Why online grow may fail in this process, appended to the failure ('' if nothing)."""
        return ""

    def reopen_devices(self, inst: "Instance") -> str | None:
        """Re-open the devices so a grown one is seen (ZFS: export/import); what was done,
        or None when there is no such step."""
        return None

    def snapshots(self) -> bool:
        """Has a snapshot command of its own (not LVM/dm-snapshot below it)."""
        return False

    def snapshot(self, inst: "Instance", name: str) -> str:
        """Take a read-only snapshot of the whole filesystem; say how."""
        raise StepFailed(f"{self.name} has no snapshot command")

    def read_snapshot(self, inst: "Instance", name: str, relpath: str) -> tuple[bytes, str]:
        """A file's content in snapshot `name`, and how it was read."""
        raise StepFailed(f"{self.name} has no snapshot command")

    def compression_enable(self) -> Enable | None:
        """How to switch transparent compression on; None: no such feature."""
        return None

    def dedup_enable(self) -> Enable | None:
        """How to switch in-line deduplication on; None: only out-of-band (FIDEDUPERANGE)."""
        return None

    def inline_data_enable(self) -> Enable:
        """How to let small files live inside metadata (on by default where it exists)."""
        return Enable()

    def keep_across_crash(self, inst: "Instance") -> dict[str, Any]:
        """The made filesystem outlives fslab (aging's kept images): note what cleanup must
        keep, and return what a journal needs to find it again (ZFS: the pool's name)."""
        return {}

    def resume_kept(self, inst: "Instance", journal: dict[str, Any]) -> None:
        """Find a kept filesystem again from its journal after the devices are re-attached."""

    def set_aside_kept(self, inst: "Instance") -> None:
        """Unmounted and kept: release it without destroying it (ZFS: export the pool)."""


class Existing(Driver):
    """A filesystem someone else mounted (--mountpoint): fslab only measures it."""
    needs_device = False

    def __init__(self, fstype: str):
        self.name = self.fstype = fstype
        try:
            # the same kernel interfaces as fslab's own driver of it
            known = filesystems.get(fstype)
            self.ioctls, self.feature_claims = known.ioctls, known.feature_claims
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
        self.driver_data: dict[str, Any] = {}   # what the driver keeps between steps (ZFS: pool)
        self.made = False
        self.info: dict[str, Any] = {}    # what happened: lazy init, options in effect...
        self.seconds: dict[str, float] = {}   # each step's wall time (bench/noise's parts)

    # steps ---------------------------------------------------------------
    def acquire(self) -> None:
        if self.driver.needs_device and not self.devices:
            t = time.perf_counter()
            for i in range(self.spec.devices):
                self.devices.append(self.target.acquire(self.size_bytes, f"{self.label}-d{i}"))
            self.seconds["acquire"] = time.perf_counter() - t

    def mkfs(self) -> None:
        self.acquire()
        t = time.perf_counter()
        self.driver.mkfs(self)
        self.seconds["mkfs"] = time.perf_counter() - t
        self.made = True

    def mount(self) -> None:
        t = time.perf_counter()
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        state.note("mount", str(self.mountpoint))
        self.driver.mount(self)
        self.info.update(self.driver.after_mount(self))
        self.seconds["mount"] = time.perf_counter() - t

    def unmount(self) -> None:
        if self.driver.held(self):
            self.driver.unmount(self)
        if is_mounted(str(self.mountpoint)):
            # e.g. a FUSE mount whose daemon died: the driver cannot see it any more
            umount(str(self.mountpoint))
        state.forget("mount", str(self.mountpoint))

    def close(self) -> None:
        t = time.perf_counter()
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
        self.seconds["teardown"] = time.perf_counter() - t
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
