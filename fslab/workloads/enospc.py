"""The full-disk suite: what a filesystem does when it runs out of space or inodes.

Cases (one fresh filesystem each):
  large_file   - one file, written 1 MiB at a time until a call fails
  small_files  - 4 KiB files, 1000 per directory, until a call fails (space or inodes)

For each: usable bytes vs image size right after mkfs; bytes and files written when
the fill failed, which call failed (open/write/fsync/close/mkdir) with which errno;
whether create / mkdir / append / overwrite / rename / rm still work when full;
space reclaimed after deleting the fill; hashes of files written before the fill;
the checker's verdict afterwards (driver.check(): e2fsck -fn, xfs_repair -n,
btrfs check --readonly, zpool scrub).

Plan table:
    [[suite]]
    kind = "enospc"
    workloads = ["large_file", "small_files"]
    image_size = "64M"       # default: 2 x the profile's file size cap, >= the driver's minimum
    max_files = 200000       # safety cap on small files (default per profile); recorded if hit
    max_seconds = 300        # safety cap on one fill's duration; recorded if hit
"""
from __future__ import annotations

import errno
import hashlib
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import orjson

from fslab import metrics
from fslab.filesystems.base import Instance
from fslab.plan.profiles import GiB, MiB, Profile, parse_size
from fslab.records import Measurement
from fslab.workloads.base import Case, Suite, UnitContext, UnitFailed, register

CHUNK = 1 * MiB
SMALL = 4096
PER_DIR = 1000
PRECIOUS = 8                     # files written before the fill, checked by hash afterwards
SPARE = "spare"                  # written before the fill too; the when-full ops modify it
OPS_WHEN_FULL = ("create", "mkdir", "append", "overwrite", "rename", "rm")
KNOWN = {"image_size", "max_files", "max_seconds"}
# the smoke profile caps the many-files fill so CI stays fast; larger profiles rarely hit it
MAX_FILES = {"smoke": 150_000, "quick": 1_000_000, "standard": 5_000_000, "paper": 50_000_000}
MAX_SECONDS = {"smoke": 120, "quick": 600, "standard": 3600, "paper": 6 * 3600}


@dataclass
class Fill:
    """How a fill ended."""
    bytes: int = 0
    files: int = 0
    failed_call: str | None = None       # open / write / fsync / close / mkdir; None = cap hit
    errno: int | None = None
    stopped_by: str = "error"            # error | max_files | max_seconds
    seconds: float = 0.0
    later_errors: list[tuple[str, int | None]] = field(default_factory=list)   # fsync/close after it
    paths: list[str] = field(default_factory=list)


@register
class EnospcSuite(Suite):
    name = "enospc"
    description = "fill to ENOSPC (one large file; many 4 KiB files): limits, errors, recovery"

    def cases(self, spec, profile: Profile) -> list[Case]:
        o, names = self.options(spec, KNOWN, ("large_file", "small_files"))
        image = parse_size(o["image_size"]) if "image_size" in o else 2 * profile.file_size(1 * GiB)
        config = {"image_bytes": image,
                  "max_files": int(o.get("max_files", MAX_FILES[profile.name])),
                  "max_seconds": float(o.get("max_seconds", MAX_SECONDS[profile.name]))}
        return [Case(name=n, params={"fill": n}, config=config, image_bytes=image) for n in names]

    def measure(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        if ctx.mountpoint_dir is not None:
            raise UnitFailed("enospc fills the filesystem; it needs its own image, not --mountpoint")
        size = parse_size(ctx.spec.image_size) if ctx.spec.image_size else case.config["image_bytes"]
        # deliberately smaller than the profile's usual image minimum: a full disk is the point
        inst = Instance(ctx.driver, ctx.spec, ctx.make_target(), ctx.workdir,
                        f"{ctx.spec.name}-{ctx.spec.variant}-enospc-{ctx.key.iteration}", size)
        out_path, rel = ctx.artifact("enospc.json")
        try:
            with inst:
                ctx.environment["filesystem"] = inst.effective()
                res = full_disk(inst, case.name, case.config, ctx.seed("enospc"), ctx.log)
        finally:
            inst.close()
        out_path.write_bytes(orjson.dumps(res, option=orjson.OPT_INDENT_2))
        return measurements(res, rel)


def full_disk(inst: Instance, fill: str, config: dict, seed: int,
              log: Callable[[str], None]) -> dict[str, Any]:
    """Run one fill on a mounted instance and everything around it; returns the evidence."""
    root = Path(inst.mountpoint)
    rng = random.Random(seed)
    res: dict[str, Any] = {"fill": fill, "image_bytes": inst.size_bytes * len(inst.devices),
                           "devices": len(inst.devices), "caps": dict(config)}
    res["fresh"] = inst.driver.capacity(inst)
    precious = _write_precious(root / "precious", rng)
    sync_fs(inst)
    filler = _fill_large if fill == "large_file" else _fill_small
    f = filler(root / "fill", rng, config)
    res["fill_result"] = {k: v for k, v in f.__dict__.items() if k != "paths"}
    if f.stopped_by != "error":
        log(f"enospc {fill}: stopped by {f.stopped_by} before the filesystem was full")
    res["full"] = inst.driver.capacity(inst)
    res["when_full"] = _ops_when_full(root, f.paths, precious)
    res["delete"] = _delete_all(f.paths)
    res["after_delete"] = settle_capacity(inst)
    res["reclaimed_bytes"] = res["after_delete"]["avail_bytes"] - res["full"]["avail_bytes"]
    res["precious_ok"] = sum(_sha(Path(p)) == h for p, h in precious.items())
    res["precious_total"] = len(precious)
    if inst.driver.checks_online:   # e.g. zpool scrub runs on the imported pool
        res["checker"] = inst.driver.check(inst)
    else:
        inst.unmount()
        res["checker"] = inst.driver.check(inst)
    return res


def _write_precious(d: Path, rng: random.Random) -> dict[str, str]:
    d.mkdir()
    out = {}
    for i in range(PRECIOUS):
        data = rng.randbytes(64 * 1024)
        p = d / f"p{i}"
        p.write_bytes(data)
        out[str(p)] = hashlib.sha256(data).hexdigest()
    (d / SPARE).write_bytes(rng.randbytes(64 * 1024))   # not hashed: overwritten when full
    return out


def _sha(p: Path) -> str | None:
    try:
        return hashlib.sha256(p.read_bytes()).hexdigest()
    except OSError:
        return None


def _fill_large(d: Path, rng: random.Random, config: dict) -> Fill:
    """Append 1 MiB chunks of random data to one file until a call fails."""
    d.mkdir()
    f = Fill()
    path = d / "large"
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    f.paths.append(str(path))
    f.files = 1
    try:
        while True:
            buf = rng.randbytes(CHUNK)      # fresh bytes: no help from dedup or compression
            view = memoryview(buf)
            while view:
                n = os.write(fd, view)      # a short write is normal near the end
                f.bytes += n
                view = view[n:]
            if time.perf_counter() - t0 > config["max_seconds"]:
                f.stopped_by = "max_seconds"
                break
    except OSError as e:
        f.failed_call, f.errno = "write", e.errno
    # space may only run out when delayed allocation meets the disk: fsync and close can fail too
    for call, fn in (("fsync", lambda: os.fsync(fd)), ("close", lambda: os.close(fd))):
        try:
            fn()
        except OSError as e:
            if f.failed_call is None:
                f.failed_call, f.errno = call, e.errno
            f.later_errors.append((call, e.errno))
    f.seconds = time.perf_counter() - t0
    return f


def _fill_small(d: Path, rng: random.Random, config: dict) -> Fill:
    """Create 4 KiB files, PER_DIR to a directory, until a call fails (or a cap is hit)."""
    d.mkdir()
    f = Fill()
    data = rng.randbytes(SMALL)
    t0 = time.perf_counter()
    sub: Path | None = None
    while True:
        if f.files % PER_DIR == 0:
            if f.files >= config["max_files"]:
                f.stopped_by = "max_files"
                break
            if time.perf_counter() - t0 > config["max_seconds"]:
                f.stopped_by = "max_seconds"
                break
            sub = d / f"d{f.files // PER_DIR:05d}"
            try:
                sub.mkdir()
            except OSError as e:
                f.failed_call, f.errno = "mkdir", e.errno
                break
        path = str(sub / f"f{f.files % PER_DIR:04d}")
        call = "open"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            f.paths.append(path)
            call = "write"
            try:
                f.bytes += os.write(fd, data)
            except OSError:
                os.close(fd)
                raise
            call = "close"
            os.close(fd)
        except OSError as e:
            f.failed_call, f.errno = call, e.errno
            break
        f.files += 1
    f.seconds = time.perf_counter() - t0
    return f


def _delete_all(paths: list[str]) -> dict[str, Any]:
    """Delete the fill; where unlink itself fails (a full COW fs may need space to delete),
    truncate the file first, the usual way out, and say how many needed it."""
    out: dict[str, Any] = {"files": len(paths), "unlink_failed": 0, "errno": None,
                           "freed_by_truncate": 0, "left": 0}
    for p in paths:
        try:
            os.unlink(p)
            continue
        except FileNotFoundError:
            continue
        except OSError as e:
            out["unlink_failed"] += 1
            out["errno"] = out["errno"] or e.errno
        try:
            os.truncate(p, 0)
            os.unlink(p)
            out["freed_by_truncate"] += 1
        except OSError:
            out["left"] += 1
    return out


def _ops_when_full(root: Path, fill_paths: list[str], precious: dict[str, str]) -> dict[str, Any]:
    """Try the everyday operations on the full filesystem: {op: {ok, errno}}."""
    victim = Path(fill_paths[0]) if fill_paths else None
    spare = root / "precious" / SPARE

    def overwrite():
        with open(spare, "r+b") as fh:
            fh.write(os.urandom(4096))
            fh.flush()
            os.fsync(fh.fileno())

    def append():
        with open(spare, "ab") as fh:
            fh.write(os.urandom(4096))
            fh.flush()
            os.fsync(fh.fileno())

    ops: dict[str, Callable[[], Any]] = {   # in this order: rm last, it frees space
        "create": lambda: os.close(os.open(root / "new-when-full", os.O_CREAT | os.O_WRONLY, 0o644)),
        "mkdir": lambda: os.mkdir(root / "dir-when-full"),
        "append": append,
        "overwrite": overwrite,
        "rename": lambda: rename_victim(),
        "rm": lambda: os.unlink(fill_paths[0]) if victim else None,
    }

    def rename_victim():
        if victim:
            os.rename(victim, str(victim) + ".renamed")
            fill_paths[0] = str(victim) + ".renamed"   # so rm (and cleanup) find it

    out: dict[str, Any] = {}
    for name in OPS_WHEN_FULL:
        try:
            ops[name]()
            out[name] = {"ok": True}
        except OSError as e:
            out[name] = {"ok": False, "errno": e.errno, "error": errno.errorcode.get(e.errno or 0)}
    if out["rm"]["ok"] and victim:
        fill_paths.pop(0)
    return out


def sync_fs(inst: Instance) -> None:
    os.sync()
    inst.driver.sync_metadata(inst)


def settle_capacity(inst: Instance) -> dict:
    """Capacity once deleted space is really free: btrfs and ZFS free it in a later
    transaction, so remount (ZFS: export/import), which commits every pending free."""
    sync_fs(inst)
    inst.cold_cache()
    return inst.driver.capacity(inst)


def measurements(res: dict, artifact: str) -> list[Measurement]:
    def m(metric, value):
        return metrics.measure("enospc", metric, value, artifact)

    fr, fresh = res["fill_result"], res["fresh"]
    ms = [m("image_bytes", res["image_bytes"]),
          m("usable_bytes", fresh["avail_bytes"]),
          m("usable_fraction", fresh["avail_bytes"] / res["image_bytes"]),
          m("filled_bytes", fr["bytes"]),
          m("filled_files", fr["files"]),
          m("fill_seconds", fr["seconds"]),
          m("fill_reached_enospc", fr["stopped_by"] == "error")]
    if fresh["files"]:        # btrfs reports 0: it has no fixed inode count
        ms.append(m("inodes_total", fresh["files"]))
    if fr["failed_call"]:   # the call's name goes in the metric, errno in the value
        ms.append(m("fill_errno", fr["errno"]))
        ms.append(m(f"fill_failed_at_{fr['failed_call']}", True))
    for op, r in res["when_full"].items():
        ms.append(m(f"when_full_{op}_ok", r["ok"]))
        if not r["ok"]:
            ms.append(m(f"when_full_{op}_errno", r["errno"]))
    d = res["delete"]
    ms += [m("delete_unlink_failed", d["unlink_failed"]),
           m("delete_needed_truncate", d["freed_by_truncate"]),
           m("delete_left_behind", d["left"])]
    ms += [m("reclaimed_bytes", res["reclaimed_bytes"]),
           m("reclaimed_fraction", res["after_delete"]["avail_bytes"] / max(1, fresh["avail_bytes"])),
           m("precious_intact", res["precious_ok"] == res["precious_total"])]
    if res["checker"].get("clean") is not None:
        ms.append(m("checker_clean", res["checker"]["clean"]))
    return ms
