"""Crash consistency: dm-flakey power cuts in the style of xfstests (`--suite crash`).

Each case is a workload of one or two operations over a few files, ending in
fsync or fdatasync. The filesystem sits on a dm-flakey device. After the sync
returns, the device is switched to drop every write (the power is "cut": nothing
more reaches the disk, but the filesystem does not know), more work is done and
the filesystem unmounted, then writes are allowed again and it is mounted, so it
recovers from what was on the disk at the cut. What an fsync/fdatasync made
durable must be there, exactly; the filesystem's checker must find it clean.

Expectations are Linux's (what xfstests checks on ext4, xfs, btrfs, f2fs): fsync
of a file also persists a new file's name; a directory fsync persists renames,
links and unlinks in it. A filesystem that does not promise that shows up here
as inconsistent: a finding, not a harness failure.

Needs device-mapper with dm-flakey: on hosts without it (ours) run it with
`--target guest`.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import orjson

from fslab.system import state
from fslab.errors import FslabError, StepFailed, TeardownFailed
from fslab.filesystems.base import Driver, Instance, drop_caches
from fslab.plan import SuiteSpec
from fslab.plan.profiles import Profile
from fslab.system.proc import run, which
from fslab.records import Measurement
from fslab.targets.base import Target
from fslab.system.teardown import is_mounted
from fslab.workloads.base import Case, Suite, UnitContext, UnitFailed, register

KiB = 1024
_DM_ENV = {**os.environ, "DM_DISABLE_UDEV": "1"}   # the guest runs no udev; dmsetup makes nodes


def pattern(seed: int, size: int) -> bytes:
    """Deterministic, non-repeating-per-block bytes, so a misplaced block is detected."""
    block = bytearray()
    i = 0
    while len(block) < size:
        block += f"{seed:08x}:{i:010d}|".encode()
        i += 1
    return bytes(block[:size])


def _write(path: Path, data: bytes, *, sync: str | None = None, append: bool = False,
           offset: int | None = None) -> None:
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else 0)
    fd = os.open(path, flags, 0o644)
    try:
        if offset is not None:
            os.pwrite(fd, data, offset)
        else:
            os.write(fd, data)
        if sync == "fsync":
            os.fsync(fd)
        elif sync == "fdatasync":
            os.fdatasync(fd)
    finally:
        os.close(fd)


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _expect_file(root: Path, name: str, data: bytes) -> list[str]:
    p = root / name
    if not p.exists():
        return [f"{name}: missing"]
    got = p.read_bytes()
    if len(got) != len(data):
        return [f"{name}: size {len(got)}, expected {len(data)}"]
    if got != data:
        bad = next(i for i in range(len(data)) if got[i] != data[i])
        return [f"{name}: content differs from byte {bad}"]
    return []


def _expect_absent(root: Path, name: str) -> list[str]:
    return [f"{name}: still exists"] if (root / name).exists() else []


@dataclass(frozen=True)
class Workload:
    """prepare (made durable with sync), act (ends in the sync under test), expect."""
    name: str
    description: str
    prepare: Callable[[Path], None]
    act: Callable[[Path], None]
    expect: Callable[[Path], list[str]]


A = pattern(1, 64 * KiB)
B = pattern(2, 64 * KiB)
NEW = pattern(3, 4 * KiB)


def _nothing(root: Path) -> None:
    pass


def _one_file(root: Path) -> None:
    (root / "a").write_bytes(A)


def _two_files(root: Path) -> None:
    (root / "a").write_bytes(A)
    (root / "b").write_bytes(B)


def _rename(root: Path) -> None:
    os.rename(root / "a", root / "renamed")
    _fsync_path(root)


def _replace(root: Path) -> None:
    # the atomic-replace idiom: write a temporary file, fsync it, rename over, fsync the dir
    _write(root / "a.tmp", B, sync="fsync")
    os.rename(root / "a.tmp", root / "a")
    _fsync_path(root)


def _link(root: Path) -> None:
    os.link(root / "a", root / "hardlink")
    _fsync_path(root)


def _link_expect(root: Path) -> list[str]:
    problems = _expect_file(root, "a", A) + _expect_file(root, "hardlink", A)
    if not problems and os.stat(root / "a").st_nlink != 2:
        problems.append(f"a: link count {os.stat(root / 'a').st_nlink}, expected 2")
    return problems


def _unlink(root: Path) -> None:
    os.unlink(root / "a")
    _fsync_path(root)


def _mkdir_create(root: Path) -> None:
    os.mkdir(root / "d")
    _write(root / "d" / "f", A, sync="fsync")
    _fsync_path(root / "d")
    _fsync_path(root)


def _overwrite_expect(root: Path) -> list[str]:
    data = bytearray(A)
    data[8 * KiB:12 * KiB] = NEW
    return _expect_file(root, "a", bytes(data))


WORKLOADS: dict[str, Workload] = {w.name: w for w in (
    Workload("create-fsync", "create a 64 KiB file, fsync it",
             _nothing, lambda r: _write(r / "a", A, sync="fsync"),
             lambda r: _expect_file(r, "a", A)),
    Workload("append-fsync", "append 64 KiB to a file, fsync",
             _one_file, lambda r: _write(r / "a", B, sync="fsync", append=True),
             lambda r: _expect_file(r, "a", A + B)),
    Workload("append-fdatasync", "append 64 KiB to a file, fdatasync (size must persist)",
             _one_file, lambda r: _write(r / "a", B, sync="fdatasync", append=True),
             lambda r: _expect_file(r, "a", A + B)),
    Workload("overwrite-fdatasync", "overwrite 4 KiB inside a file, fdatasync",
             _one_file, lambda r: _write(r / "a", NEW, sync="fdatasync", offset=8 * KiB),
             _overwrite_expect),
    Workload("truncate-fsync", "truncate a file to 10000 bytes, fsync",
             _one_file, lambda r: (os.truncate(r / "a", 10000), _fsync_path(r / "a")),
             lambda r: _expect_file(r, "a", A[:10000])),
    Workload("rename-fsync", "rename a file, fsync the directory",
             _one_file, _rename,
             lambda r: _expect_file(r, "renamed", A) + _expect_absent(r, "a")),
    Workload("replace-fsync", "write+fsync a temp file, rename it over another, fsync the dir",
             _one_file, _replace,
             lambda r: _expect_file(r, "a", B) + _expect_absent(r, "a.tmp")),
    Workload("link-fsync", "hard-link a file, fsync the directory",
             _one_file, _link, _link_expect),
    Workload("unlink-fsync", "unlink one of two files, fsync the directory",
             _two_files, _unlink,
             lambda r: _expect_absent(r, "a") + _expect_file(r, "b", B)),
    Workload("mkdir-create-fsync", "mkdir, create a file in it, fsync file, dir and parent",
             _nothing, _mkdir_create, lambda r: _expect_file(r, "d/f", A)),
)}


def _after_cut(root: Path) -> None:
    """Work done after the power cut: none of it may reach the disk or disturb the rest."""
    _write(root / "late", pattern(9, 256 * KiB))
    for name in ("a", "b"):
        if (root / name).exists():
            _write(root / name, pattern(10, 4 * KiB), offset=0)
    os.sync()


# --- dm-flakey --------------------------------------------------------------

def flakey_available() -> str | None:
    """None if dm-flakey can be used here, else why not."""
    if not which("dmsetup"):
        return "dmsetup not installed (apt-get install dmsetup)"
    if Path("/sys/module/dm_flakey").exists():
        return None
    rel = os.uname().release
    mods = Path(f"/lib/modules/{rel}")
    if mods.exists() and any(mods.rglob("dm-flakey.ko*")):
        return None
    return "needs device-mapper's dm-flakey, which this kernel lacks: run with --target guest"


class FlakeyTarget(Target):
    """A dm-flakey device over each device of an inner target; writes can be cut off."""
    kind = "dm-flakey"

    def __init__(self, inner: Target):
        self.inner = inner
        self.maps: list[tuple[str, str, int]] = []   # (dm name, backing device, sectors)

    def acquire(self, size_bytes: int, label: str) -> str:
        backing = self.inner.acquire(size_bytes, label)
        sectors = int(run(["blockdev", "--getsz", backing]).stdout.strip())
        name = f"fslab-flakey-{os.getpid()}-{len(self.maps)}-{label}"[:120]
        run(["modprobe", "dm_flakey"], check=False)
        state.note("dm", name)
        run(["dmsetup", "create", name, "--table", self._table(backing, sectors, drop=False)],
            env=_DM_ENV)
        self.maps.append((name, backing, sectors))
        return f"/dev/mapper/{name}"

    @staticmethod
    def _table(backing: str, sectors: int, drop: bool) -> str:
        # xfstests' FLAKEY_ALLOW_WRITES / FLAKEY_DROP_WRITES tables
        if drop:
            return f"0 {sectors} flakey {backing} 0 0 180 1 drop_writes"
        return f"0 {sectors} flakey {backing} 0 180 0"

    def set_writes(self, allow: bool) -> None:
        for name, backing, sectors in self.maps:
            # --nolockfs: no freeze, so dirty data is NOT flushed first: a real power cut
            run(["dmsetup", "suspend", "--nolockfs", name], env=_DM_ENV)
            run(["dmsetup", "load", name, "--table", self._table(backing, sectors, drop=not allow)],
                env=_DM_ENV)
            run(["dmsetup", "resume", name], env=_DM_ENV)

    def release(self) -> None:
        for name, _, _ in reversed(self.maps):
            remove_dm(name)
            state.forget("dm", name)
        self.maps.clear()
        self.inner.release()

    def describe(self) -> dict:
        return {"kind": self.kind, "inner": self.inner.describe()}


def remove_dm(name: str) -> None:
    if not Path(f"/dev/mapper/{name}").exists() and \
            not run(["dmsetup", "info", name], check=False, env=_DM_ENV).ok:
        return
    for i in range(10):
        r = run(["dmsetup", "remove", name], check=False, env=_DM_ENV)
        if r.ok:
            return
        time.sleep(0.2 * (i + 1))
    raise TeardownFailed(f"cannot remove dm device {name}: {r.stderr.strip()}")


@state.handler("dm")
def _cleanup_dm(e: dict) -> None:
    remove_dm(e["id"])


# --- the suite --------------------------------------------------------------

@register
class Crash(Suite):
    name = "crash"
    description = "dm-flakey power cuts after fsync/fdatasync: is what was synced intact?"

    def cases(self, spec: SuiteSpec, profile: Profile) -> list[Case]:
        names = spec.workloads or list(WORKLOADS)
        unknown = [n for n in names if n not in WORKLOADS]
        if unknown:
            raise FslabError(f"crash suite: unknown workloads {', '.join(unknown)}; "
                             f"known: {', '.join(WORKLOADS)}")
        return [Case(n, {"workload": n}, WORKLOADS[n], profile.min_image_bytes) for n in names]

    def supports(self, driver: Driver) -> str | None:
        # a filesystem with no block device of its own (or one dm cannot sit under)
        return driver.dm_refusal or flakey_available()

    def measure(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        if ctx.mountpoint_dir is not None:
            raise StepFailed("the crash suite makes its own filesystem; it cannot use --mountpoint")
        w: Workload = case.config
        target = FlakeyTarget(ctx.make_target())
        label = f"crash-{ctx.spec.name}-{ctx.key.iteration}".replace("/", "_")
        inst = Instance(ctx.driver, ctx.spec, target, ctx.workdir, label,
                        max(case.image_bytes, ctx.profile.min_image_bytes))
        detail: dict = {"workload": w.name, "description": w.description}
        try:
            inst.mkfs()
            inst.mount()
            ctx.environment["filesystem"] = inst.effective()
            root = inst.mountpoint
            w.prepare(root)
            os.sync()                       # everything before the act is durable
            w.act(root)                     # ends with the sync under test
            target.set_writes(allow=False)  # power cut
            _after_cut(root)
            inst.unmount()                  # its writes go nowhere
            ctx.driver.forget_after_power_cut(inst)   # nothing survives but the disk
            target.set_writes(allow=True)
            drop_caches()                   # no page of the dropped writes may be read back
            t = time.perf_counter()
            try:
                inst.mount()                # recovery (journal replay, roll-forward...)
                detail["recovery_mount_s"] = time.perf_counter() - t
            except StepFailed as e:
                detail["problems"] = [f"mount after the cut failed: {e}"]
            else:
                if (root / "late").exists():
                    # the control: work after the cut must be gone, or nothing was tested
                    raise UnitFailed("the power cut did not take effect: a file written "
                                     "after it survived (dm-flakey drop_writes not active?)")
                detail["problems"] = w.expect(root)
            if is_mounted(str(root)):
                inst.unmount()
            check = ctx.driver.check(inst)
            detail["checker"] = check
        finally:
            inst.close()
        path, rel = ctx.artifact("crash.json")
        path.write_bytes(orjson.dumps(detail, option=orjson.OPT_INDENT_2))
        m = self.metrics.measure
        out = [m("crash_consistent", 0.0 if detail["problems"] else 1.0, rel)]
        if check.get("clean") is not None:
            out.append(m("fsck_clean", 1.0 if check["clean"] else 0.0, rel))
        if "recovery_mount_s" in detail:
            out.append(m("recovery_mount_time", detail["recovery_mount_s"], rel))
        for p in detail["problems"]:
            ctx.log(f"crash {ctx.spec.label} {w.name}: {p}")
        return out
