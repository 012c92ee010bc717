"""Silent-corruption test: flip bytes on the device under a filesystem, see what it notices.

`corrupt_and_classify(inst, ...)` is the whole experiment on one mounted Instance:

1. write files of incompressible random data; every 4 KiB block starts with a
   16-byte tag (magic + run nonce + file + block) so it can be found on the raw
   image without trusting the filesystem's own maps;
2. sync, unmount (ZFS: export, so the ARC is empty);
3. scan the loop image files for the tags (cross-checked with FIEMAP where it
   exists) and flip bytes in the chosen blocks, straight in the image file, then
   flush the loop device's buffers and drop caches so nothing stale is served;
4. remount (import) and read every file back; classify each damaged file:
     detected - the read failed (EIO, EUCLEAN, ...): corruption did not pass silently
     silent   - the read returned data that differs from what was written
     healed   - the read returned exactly what was written (a good copy was used)
5. record what the filesystem said: kernel log lines for our devices, `btrfs
   device stats`, `zpool status` CKSUM counters, scrub results, the checker.

With damage="metadata" the target is a directory: entry names carry a marker,
every on-disk copy of one entry's name is flipped, and the outcome is judged by
listing and stat-ing the directory (detected = error, silent = a listing that
differs, healed = identical listing).

Used by the integrity suite and by the feature matrix's live "checksums" probe.
"""
from __future__ import annotations

import errno
import os
import random
import re
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from fslab.system import fiemap
from fslab.filesystems.base import Instance, drop_caches
from fslab.system.proc import run

BLOCK = 4096
MAGIC = b"FSLT"
FLIP_AT, FLIP_LEN = 1024, 64          # bytes flipped inside a data block (tag left intact)
OUTCOMES = ("detected", "silent", "healed")


# --- tagged data -------------------------------------------------------------

def tag(nonce: bytes, file_no: int, block_no: int) -> bytes:
    return MAGIC + nonce + struct.pack(">HH", file_no, block_no)


def file_bytes(nonce: bytes, seed: int, file_no: int, blocks: int) -> bytes:
    """The exact content of tagged file `file_no` (regenerated to verify reads)."""
    rng = random.Random(seed * 1_000_003 + file_no)
    return b"".join(tag(nonce, file_no, b) + rng.randbytes(BLOCK - 16) for b in range(blocks))


@dataclass
class Location:
    image: int        # index into the instance's image files
    offset: int       # byte offset of the block start in that image


def scan_images(images: list[str], pattern: bytes, extra: int = 4) -> dict[bytes, list[Location]]:
    """Every occurrence of `pattern` + `extra` following bytes in the image files.

    Sparse holes are skipped (SEEK_DATA), so a mostly empty image scans quickly.
    Returns {pattern + extra bytes: [locations of the pattern]}.
    """
    found: dict[bytes, list[Location]] = {}
    chunk, overlap = 8 << 20, len(pattern) + extra
    for idx, path in enumerate(images):
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            pos = 0
            while pos < size:
                try:
                    start = os.lseek(fd, pos, os.SEEK_DATA)
                    end = os.lseek(fd, start, os.SEEK_HOLE)
                except OSError as e:
                    if e.errno == errno.ENXIO:   # no data after pos
                        break
                    raise
                off = start
                while off < end:
                    buf = os.pread(fd, min(chunk, end - off) + overlap, off)
                    i = buf.find(pattern)
                    while i != -1:
                        if i + overlap <= len(buf) and i < chunk:
                            found.setdefault(buf[i:i + overlap], []).append(Location(idx, off + i))
                        i = buf.find(pattern, i + 1)
                    off += chunk
                pos = end
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return found


def flip(images: list[str], loc: Location, at: int, length: int, mask: int = 0xFF) -> None:
    """XOR `length` bytes at loc.offset+at in the image file, durably, bypassing stale caches."""
    fd = os.open(images[loc.image], os.O_RDWR)
    try:
        pos = loc.offset + at
        old = os.pread(fd, length, pos)
        os.pwrite(fd, bytes(b ^ mask for b in old), pos)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def flush_devices(devices: list[str]) -> None:
    """Forget the loop devices' own cached blocks, so the next mount reads the image file."""
    for d in devices:
        run(["blockdev", "--flushbufs", d], check=False)
    drop_caches()


# --- what the filesystem said ------------------------------------------------

def kmsg_mark(text: str) -> None:
    """Put a marker line in the kernel log, so we can take only what follows it."""
    try:
        with open("/dev/kmsg", "w") as f:
            f.write(f"fslab: {text}\n")
    except OSError:
        pass


def kmsg_since(marker: str, devices: list[str]) -> list[str]:
    """Kernel log lines after `marker` that mention one of our devices."""
    out = run(["dmesg"], check=False).stdout.splitlines()
    idx = max((i for i, ln in enumerate(out) if f"fslab: {marker}" in ln), default=-1)
    names = [os.path.basename(d) for d in devices]
    return [ln for ln in out[idx + 1:]
            if any(re.search(rf"\b{re.escape(n)}\b", ln) for n in names)]


def fs_reports(inst: Instance, marker: str) -> dict[str, Any]:
    """Everything the filesystem itself reported about errors since `marker`."""
    return {"kernel_log": kmsg_since(marker, inst.devices), **inst.driver.error_counters(inst)}


def scrub(inst: Instance) -> dict[str, Any] | None:
    """Run the filesystem's online scrub, if it has one; None otherwise."""
    return inst.driver.scrub(inst)


# --- the experiment ----------------------------------------------------------

@dataclass
class Victim:
    """One damaged thing (a file's block, or a directory's entry) and what became of it."""
    name: str                          # the file or directory path
    key: bytes                         # the bytes that identify it on the image
    block: int = 0                     # data: which 4 KiB block of the file is damaged
    obj: int = 0                       # metadata: the directory's inode (ZFS object) number
    locations: list[Location] = field(default_factory=list)
    fiemap_offset: int | None = None
    outcome: str | None = None         # detected / silent / healed, or None if not damaged
    error: str | None = None           # errno name of the failure, when detected
    after_scrub: str | None = None


@dataclass
class Experiment:
    inst: Instance
    damage: str                    # "data" or "metadata"
    files: int
    blocks_per_file: int
    damaged: int
    copies: str                    # "one" or "all" on-disk copies of each damaged block
    seed: int
    log: Callable[[str], None]
    # damage metadata not found by scanning (ZFS: located with zdb)? None: unless the driver
    # says damaged metadata can hang other users (zfs-fuse)
    zfs_metadata: bool | None = None
    nonce: bytes = b""
    victims: list[Victim] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)

    @property
    def images(self) -> list[str]:
        return self.inst.target.image_paths()

    @property
    def root(self) -> Path:
        return Path(self.inst.mountpoint) / "integrity"


def corrupt_and_classify(inst: Instance, *, damage: str = "data", files: int = 16,
                         blocks_per_file: int = 16, damaged: int = 8, copies: str = "one",
                         seed: int = 0, log: Callable[[str], None] = lambda m: None,
                         zfs_metadata: bool | None = None) -> dict[str, Any]:
    """Damage `damaged` files (or directories) of a mounted Instance on its image; classify.

    Returns a plain dict: counts per outcome, each victim, what the filesystem
    reported, mount/scrub/checker results. The instance is left unmounted (pool
    exported or imported, as the checker left it); the caller closes it.
    """
    if damage not in ("data", "metadata"):
        raise ValueError("damage must be 'data' or 'metadata'")
    if copies not in ("one", "all"):
        raise ValueError("copies must be 'one' or 'all'")
    if not inst.target.image_paths():
        raise ValueError("corrupt_and_classify needs a loop-image target (it edits the image file)")
    ex = Experiment(inst, damage, files, blocks_per_file, min(damaged, files), copies, seed, log,
                    zfs_metadata, nonce=random.Random(seed).randbytes(8))
    ex.result = {"damage": damage, "copies": "all" if damage == "metadata" else copies,
                 "fs": inst.driver.name,
                 "images": len(ex.images), "nonce": ex.nonce.hex()}
    expected = _write(ex)
    _go_offline(ex)
    found = _locate_and_flip(ex)
    marker = f"integrity {ex.nonce.hex()} {damage}"
    kmsg_mark(marker)
    if found:
        _remount_and_read(ex, expected)
        ex.result["fs_reports"] = fs_reports(inst, marker)
        if ex.result["mount"]["ok"]:
            _scrub_and_reread(ex, expected)
    else:
        ex.result["mount"] = {"ok": None}
    _fsck(ex)
    counts = {o: sum(v.outcome == o for v in ex.victims) for o in OUTCOMES}
    ex.result.update(counts=counts, damaged=sum(v.outcome is not None for v in ex.victims),
                     victims=[_victim_dict(v) for v in ex.victims])
    return ex.result


def _victim_dict(v: Victim) -> dict[str, Any]:
    return {"name": v.name, "outcome": v.outcome, "error": v.error, "after_scrub": v.after_scrub,
            "copies_found": len(v.locations), "fiemap_offset": v.fiemap_offset,
            "locations": [{"image": loc.image, "offset": loc.offset} for loc in v.locations]}


def _write(ex: Experiment) -> dict[str, Any]:
    """Write the files (data) or directories (metadata); return what reading must give back."""
    ex.root.mkdir()
    rng = random.Random(ex.seed)
    expected: dict[str, Any] = {}
    for f in range(ex.files):
        p = ex.root / f"f{f:04d}.bin"
        data = file_bytes(ex.nonce, ex.seed, f, ex.blocks_per_file)
        # no fsync per file: on ZFS it would also put a copy in the intent log (ZIL),
        # a stale second copy the scan would find; one sync() at the end suffices
        p.write_bytes(data)
        expected[str(p)] = data
    if ex.damage == "metadata":
        # directories big enough to need their own blocks (not inline in the inode)
        for d in range(ex.damaged):
            dpath = ex.root / f"dir{d:02d}"
            dpath.mkdir()
            names = [_entry_name(ex.nonce, d, e) for e in range(150)]
            for n in names:
                (dpath / n).touch()
            expected[str(dpath)] = sorted(names)
            ex.victims.append(Victim(str(dpath), names[rng.randrange(len(names))].encode(),
                                     obj=dpath.stat().st_ino))
    else:
        for f in sorted(rng.sample(range(ex.files), ex.damaged)):
            block = rng.randrange(ex.blocks_per_file)
            ex.victims.append(Victim(str(ex.root / f"f{f:04d}.bin"), tag(ex.nonce, f, block), block))
    os.sync()
    _fiemap_victims(ex)
    return expected


def _entry_name(nonce: bytes, d: int, e: int) -> str:
    return f"fslabmeta{nonce.hex()}d{d:02d}e{e:04d}"


def _fiemap_victims(ex: Experiment) -> None:
    """Where FIEMAP says each damaged data block is (cross-checked against the scan)."""
    if ex.damage != "data":
        return
    try:
        for v in ex.victims:
            v.fiemap_offset = fiemap.physical_offset(fiemap.extents(v.name), v.block * BLOCK)
        ex.result["fiemap"] = "available"
    except fiemap.FiemapUnsupported:
        ex.result["fiemap"] = "not supported by this filesystem"


def _go_offline(ex: Experiment) -> None:
    """Unmount so every byte is on the image; ZFS: export, so nothing stays in the ARC."""
    os.sync()
    ex.inst.unmount()
    ex.inst.driver.export_for_offline(ex.inst)


def _locate_and_flip(ex: Experiment) -> bool:
    """Find the victims' blocks on the images and flip bytes in them. False if none found."""
    images = ex.images
    if ex.damage == "data":
        found = scan_images(images, MAGIC + ex.nonce, extra=4)
        ex.result["tagged_blocks_found"] = sum(len(v) for v in found.values())
        ex.result["tagged_blocks_written"] = ex.files * ex.blocks_per_file
        for v in ex.victims:
            v.locations = sorted(found.get(v.key, []), key=lambda loc: (loc.image, loc.offset))
        _crosscheck_fiemap(ex)
        at, length = FLIP_AT, FLIP_LEN
        mask = 0xFF
    elif not ex.inst.driver.metadata_scannable:
        # ZFS compresses metadata, so the names are not on the image: zdb can say where the
        # directory's blocks are (opt-in: damaged metadata once left zfs-fuse 0.7 deadlocked,
        # every zpool command hanging, which stops every other user of that daemon too)
        if ex.zfs_metadata or (ex.zfs_metadata is None
                               and not ex.inst.driver.metadata_damage_hangs_others):
            for v in ex.victims:
                v.locations = [Location(i, off)
                               for i, off in ex.inst.driver.metadata_locations(ex.inst, v.obj)]
            ex.result["metadata_located_by"] = "zdb block pointers (DVAs) of the directory object"
        else:
            ex.result["metadata_located_by"] = ZFS_METADATA_OFF
        at, length, mask = ZFS_FLIP_AT, 16, 0xFF
    else:
        prefix = _entry_name(ex.nonce, 0, 0).encode()[:len("fslabmeta") + 16]
        found = scan_images(images, prefix, extra=len(ex.victims[0].key) - len(prefix))
        for v in ex.victims:
            v.locations = sorted(found.get(v.key, []), key=lambda loc: (loc.image, loc.offset))
        # flip the hex nonce of the name (XOR 0x20 keeps it a legal name: no '/' or NUL)
        at, length, mask = len("fslabmeta"), 16, 0x20
        ex.result["metadata_located_by"] = "scan of the image for the entry's name"
    if ex.damage == "metadata":
        ex.result["metadata_copies_found"] = sum(len(v.locations) for v in ex.victims)
    for i, v in enumerate(ex.victims):
        if not v.locations:
            continue
        if ex.copies == "all" or ex.damage == "metadata":
            targets = v.locations
        else:   # alternate between copies, so a mirror read hits a damaged copy half the time
            targets = [v.locations[i % len(v.locations)]]
        for loc in targets:
            flip(images, loc, at, length, mask=mask)
        v.outcome = "pending"
    flush_devices(ex.inst.devices)
    damaged = [v for v in ex.victims if v.outcome == "pending"]
    if not damaged:
        ex.result["not_damaged"] = (
            ZFS_METADATA_OFF if ex.result.get("metadata_located_by") == ZFS_METADATA_OFF else
            "the victims' bytes were not found on the image (compressed, encrypted or "
            "inline metadata?): nothing was damaged, nothing is classified")
        ex.log(ex.result["not_damaged"])
    return bool(damaged)


def _crosscheck_fiemap(ex: Experiment) -> None:
    """Does the scan agree with the filesystem's own map (Driver.physical_locations)?"""
    checked = agree = 0
    for v in ex.victims:
        if v.fiemap_offset is None or not v.locations:
            continue
        checked += 1
        offsets = {(loc.image, loc.offset) for loc in v.locations}
        mapped = ex.inst.driver.physical_locations(ex.inst, v.fiemap_offset)
        agree += bool(mapped) and mapped <= offsets
    ex.result["fiemap_crosscheck"] = {"checked": checked, "agree": agree}


ZFS_METADATA_OFF = ("not attempted on zfs-fuse: ZFS compresses metadata, so directory names are "
                    "not on the image, and locating the blocks with zdb is opt-in there "
                    "(zfs_metadata = true) because zfs-fuse 0.7 deadlocked, for every user of "
                    "its daemon, after its metadata was damaged (kernel OpenZFS: --target guest)")
ZFS_FLIP_AT = 32         # inside the block's (compressed) payload, not past its physical size


def _remount_and_read(ex: Experiment, expected: dict[str, Any]) -> None:
    t = time.perf_counter()
    try:
        ex.inst.mount()
        ex.result["mount"] = {"ok": True, "seconds": time.perf_counter() - t}
    except Exception as e:   # a refused mount is itself a detection
        ex.result["mount"] = {"ok": False, "error": str(e)}
        for v in ex.victims:
            if v.outcome == "pending":
                v.outcome, v.error = "detected", "mount refused"
        return
    damaged = {v.name for v in ex.victims if v.outcome == "pending"}
    collateral = []
    for path, want in expected.items():
        outcome, err = _check(path, want)
        victim = next((v for v in ex.victims if v.name == path and path in damaged), None)
        if victim:
            victim.outcome, victim.error = outcome, err
        elif outcome != "healed":   # an undamaged file or directory that no longer reads right
            collateral.append({"path": path, "outcome": outcome, "error": err})
    ex.result["collateral"] = collateral


def _check(path: str, want: Any) -> tuple[str, str | None]:
    """Read a file (or list a directory) once: (detected|silent|healed, errno name)."""
    try:
        if isinstance(want, bytes):
            with open(path, "rb") as f:
                got: Any = f.read()
        else:
            got = sorted(os.listdir(path))
            for n in got:
                os.stat(os.path.join(path, n))
    except OSError as e:
        return "detected", errno.errorcode.get(e.errno or 0, str(e.errno))
    return ("healed" if got == want else "silent"), None


def _scrub_and_reread(ex: Experiment, expected: dict[str, Any]) -> None:
    s = scrub(ex.inst)
    ex.result["scrub"] = s
    if s is None:
        return
    for v in ex.victims:
        if v.outcome is not None:
            v.after_scrub = _check(v.name, expected[v.name])[0]


def _fsck(ex: Experiment) -> None:
    """The offline checker, read-only (ZFS has none: its scrub above is the check)."""
    if ex.inst.driver.checks_online:
        ex.result["fsck"] = None
        return
    try:
        ex.inst.unmount()
    except Exception as e:
        ex.result["fsck"] = {"clean": None, "output": f"could not unmount: {e}"}
        return
    ex.result["fsck"] = ex.inst.driver.check(ex.inst)
