"""ZFS: kernel OpenZFS when this kernel has the zfs module, else Debian's zfs-fuse.

A "mkfs" here is `zpool create` of a single-vdev pool (mirror with devices > 1)
with the plan's dataset properties (-O) and pool properties (-o) passed through.
zfs-fuse's daemon is started when needed and stopped at the end of the run,
only if fslab started it and nobody else still uses it.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import time
from pathlib import Path

from fslab.system import state
from fslab.system.fuse import abort_fuse
from fslab.errors import StepFailed, TeardownFailed, TimedOut
from fslab.filesystems import register
from fslab.filesystems.base import FeatureClaim, Option
from fslab.filesystems.base import Availability, Driver, Enable, Instance, drop_caches
from fslab.system.proc import is_root, run, which
from fslab.plan.profiles import parse_size
from fslab.filesystems.zfs_fuse_daemon import (ensure_fuse_daemon, fuse_daemon_pid,  # noqa: F401
                                                pools_in_use, replace_hung_daemon, responsive,
                                                stop_fuse_daemon_if_ours)

_counter = 0
# a zpool/zfs command of a teardown that takes longer means zfs-fuse is stuck (it can
# stall for good, e.g. in a txg sync under fsync): escalate rather than wait
TEARDOWN_TIMEOUT_S = 60


# Left in a guest image built without OpenZFS: why (fslab.guest.openzfs.UNAVAILABLE_NOTE)
MISSING_NOTE = Path("/etc/fslab/zfs-unavailable")


def kernel_zfs() -> bool:
    return Path("/sys/module/zfs").exists()


def load_kernel_module() -> bool:
    """Load OpenZFS if it is installed but not loaded (as in the guest image): where this
    kernel has ZFS, fslab measures it and not zfs-fuse."""
    if kernel_zfs():
        return True
    if not _module_installed():
        return False
    run(["modprobe", "zfs"], check=False, timeout=300)   # ~5 s under TCG
    return kernel_zfs()


@functools.cache
def _module_installed() -> bool:
    return bool(which("modinfo")) and run(["modinfo", "-F", "version", "zfs"], check=False,
                                          timeout=30).ok


@register
class Zfs(Driver):
    name = "zfs"
    fstype = "zfs"
    packages = ["zfs-fuse"]
    min_bytes = 128 << 20
    # kernel OpenZFS runs on a dm device like on any disk; zfs-fuse is not tested there.
    # Installed counts as kernel OpenZFS: a schedule asks before available() loads it (guest)
    dm_refusal = property(lambda self: None if kernel_zfs() or _module_installed() else
                          "zfs-fuse pools are not tested on dm-flakey: use --target guest (OpenZFS)")
    checks_online = True          # check() is a scrub of the imported pool
    metadata_scannable = False    # ZFS compresses metadata: names are not on the image
    # zfs-fuse 0.7 deadlocked for every user of its daemon after its metadata was damaged;
    # kernel OpenZFS reports a checksum error (EIO) on that dataset only
    metadata_damage_hangs_others = property(lambda self: not load_kernel_module())
    grow_tool = "zpool online -e"
    feature_claims = property(lambda self: {"zfs": KERNEL_FEATURE_CLAIMS, "zfs-fuse": FUSE_FEATURE_CLAIMS})
    catalogue = property(lambda self: CATALOGUE)
    takes_properties = True
    implementation_names = {"zfs": "OpenZFS", "zfs-fuse": "zfs-fuse"}

    def available(self) -> Availability:
        if not is_root():
            return Availability(False, why="needs root (or use --mountpoint DIR)",
                                packages=self.packages)
        if MISSING_NOTE.exists():
            return Availability(False, why=MISSING_NOTE.read_text().strip(),
                                packages=self.packages)
        if not which("zpool") or not which("zfs"):
            return Availability(False, why="zpool/zfs not installed (apt-get install zfs-fuse, "
                                "or OpenZFS zfsutils-linux with the zfs module)",
                                packages=self.packages)
        if load_kernel_module():
            return Availability(True, how=self.implementation_label())
        if not which("zfs-fuse"):
            return Availability(False, why="no zfs kernel module and zfs-fuse not installed",
                                packages=self.packages)
        if not Path("/dev/fuse").exists():
            return Availability(False, why="zfs-fuse needs /dev/fuse", packages=self.packages)
        return Availability(True, how=f"{self.implementation_label()}: a userspace port, its "
                            "numbers are about FUSE; kernel OpenZFS runs with --target guest")

    def versions(self) -> dict[str, str]:
        if load_kernel_module():
            r = run(["zfs", "version"], check=False)
            return {"zfs": r.stdout.strip().replace("\n", "; ")}
        r = run(["dpkg-query", "-W", "-f", "${Version}", "zfs-fuse"], check=False)
        return {"zfs-fuse": r.stdout.strip() or "unknown"}

    def implementation(self) -> str:
        return "zfs" if load_kernel_module() else "zfs-fuse"

    def implementation_label(self) -> str:
        """'OpenZFS 2.3.2 kernel module' or 'zfs-fuse 0.7.0 (FUSE daemon)': a ZFS number
        must never be read as the other implementation's."""
        if load_kernel_module():
            try:
                version = Path("/sys/module/zfs/version").read_text().split("-")[0].strip()
            except OSError:
                version = "?"
            return f"OpenZFS {version} kernel module"
        r = run(["dpkg-query", "-W", "-f", "${Version}", "zfs-fuse"], check=False)
        version = r.stdout.strip().split("-")[0] or "?"
        return f"zfs-fuse {version} (FUSE daemon)"

    # lifecycle ---------------------------------------------------------------
    def mkfs(self, inst: Instance) -> None:
        global _counter
        if not load_kernel_module():
            if ensure_fuse_daemon():
                inst.info["zfs_fuse_started_by_fslab"] = True
        _counter += 1
        inst.driver_data["pool"] = f"fslab{os.getpid()}x{_counter}"
        argv = ["zpool", "create", "-f", "-m", "none"]
        if "cachefile" not in inst.spec.pool_properties:
            argv += ["-o", "cachefile=none"]   # never re-imported behind fslab's back
        for k, v in inst.spec.pool_properties.items():
            argv += ["-o", f"{k}={v}"]
        for k, v in inst.spec.properties.items():
            argv += ["-O", f"{k}={v}"]
        argv += inst.spec.mkfs_options
        argv.append(pool_of(inst))
        if len(inst.devices) > 1:
            argv.append("mirror")
        argv += inst.devices
        state.note("zpool", pool_of(inst))
        try:
            run(argv, timeout=600)
        except StepFailed:
            if kernel_zfs() or fuse_daemon_pid():
                raise
            # another fslab run ended between our start and this create and stopped the
            # then idle daemon: start it again, once
            ensure_fuse_daemon()
            run(argv, timeout=600)

    def apply_commands(self, spec, device: str = "/dev/DEVICE",
                       mountpoint: str = "/srv/data") -> list[str]:
        """zpool create with the variant's pool (-o) and dataset (-O) properties, and the
        same dataset properties for a pool that already exists."""
        argv = ["zpool", "create"] + [w for k, v in spec.pool_properties.items() for w in ("-o", f"{k}={v}")]
        argv += [w for k, v in spec.properties.items() for w in ("-O", f"{k}={v}")]
        argv += ["-m", mountpoint, *spec.mkfs_options, "tank", device]
        out = [" ".join(argv)]
        if spec.properties:
            out.append("existing pool: zfs set " + " ".join(f"{k}={v}" for k, v in spec.properties.items())
                       + " tank  (recordsize and compression apply to data written afterwards)")
        if spec.mount_options:
            out.append(f"zfs mount -o {','.join(spec.mount_options)} tank")
        return out

    def mount(self, inst: Instance) -> None:
        if not zpool_imported(pool_of(inst)):
            self._import(inst)
        # mount options (e.g. atime=off) go as properties too; plain "-o" for zfs mount
        current = run(["zfs", "get", "-H", "-o", "value", "mountpoint", pool_of(inst)], check=False)
        if current.stdout.strip() != str(inst.mountpoint):
            # setting it again after an import remounts, which zfs-fuse may refuse as busy
            run(["zfs", "set", f"mountpoint={inst.mountpoint}", pool_of(inst)])
        if not _zfs_mounted(pool_of(inst)):
            argv = ["zfs", "mount"]
            if inst.spec.mount_options:
                argv += ["-o", ",".join(inst.spec.mount_options)]
            run(argv + [pool_of(inst)])

    def unmount(self, inst: Instance) -> None:
        self._through_daemon(inst, lambda: self._unmount(inst, TEARDOWN_TIMEOUT_S))

    def _unmount(self, inst: Instance, timeout: float) -> None:
        if not (pool_of(inst) and zpool_imported(pool_of(inst), timeout)):
            return
        for i in range(8):   # zfs-fuse is briefly busy after the last close
            if not _zfs_mounted(pool_of(inst), timeout) or run(["zfs", "umount", pool_of(inst)],
                                                            check=False, timeout=timeout).ok:
                return
            time.sleep(0.25 * (i + 1))
        run(["zfs", "umount", "-f", pool_of(inst)], timeout=timeout)

    def forget_after_power_cut(self, inst: Instance) -> None:
        # the export's own writes are dropped too: the next mount imports the pool from
        # the disk as the cut left it and replays its intent log (ZIL), as after a reboot
        if pool_of(inst) and zpool_imported(pool_of(inst)):
            run(["zpool", "export", "-f", pool_of(inst)], timeout=300)

    def destroy(self, inst: Instance) -> None:
        if pool_of(inst):
            self._through_daemon(inst, lambda: destroy_zpool(pool_of(inst), timeout=TEARDOWN_TIMEOUT_S))
            state.forget("zpool", pool_of(inst))

    def recover_after_hang(self, inst: Instance) -> str | None:
        """After a unit hung in the pool: if zfs-fuse no longer answers, or cannot tear
        the pool down in time, replace the daemon (only one fslab started)."""
        if kernel_zfs() or not pool_of(inst):
            return None
        if not responsive(timeout=10):
            return self._escalate(inst, "zfs-fuse did not answer `zpool list` in 10 s")
        try:
            self._unmount(inst, 30)
            destroy_zpool(pool_of(inst), timeout=30)
        except TimedOut as e:
            return self._escalate(inst, f"zfs-fuse could not tear the pool down ({e})")
        except (StepFailed, RuntimeError):
            pass   # not a hang (e.g. busy): the unit's teardown tries again and says why
        return None

    def _through_daemon(self, inst: Instance, step) -> None:
        """A teardown step that talks to zfs-fuse: when a command passes its time limit
        the daemon is stuck, and the step escalates instead of waiting (once per pool)."""
        if "zfs_daemon_hung" in inst.info:   # not fslab's to replace: leave it to cleanup
            raise StepFailed(inst.info["zfs_daemon_hung"])
        try:
            step()
        except TimedOut as e:
            if kernel_zfs():
                raise
            inst.info["recovered"] = self._escalate(inst, f"zfs-fuse stuck in teardown ({e})")
            if "zfs_daemon_hung" in inst.info:
                raise StepFailed(inst.info["zfs_daemon_hung"]) from None

    def _escalate(self, inst: Instance, why: str) -> str:
        """The daemon is stuck: abort this pool's FUSE connection (nothing waits on it any
        more), then replace the daemon if fslab started it; its pool goes with it. If it
        is not fslab's, the pool is left noted in the state file for `fslab cleanup`."""
        abort_fuse(str(inst.mountpoint))
        try:
            done = replace_hung_daemon(why)
        except StepFailed as e:
            inst.info["zfs_daemon_hung"] = f"{why}; {e}"
            return inst.info["zfs_daemon_hung"]
        return f"{done}; pool {pool_of(inst)} forgotten with it"

    def _import(self, inst: Instance) -> None:
        # import only from this instance's own devices: a directory of symlinks to them
        ddir = inst.workdir / f"zdev-{inst.label}"
        ddir.mkdir(parents=True, exist_ok=True)
        for d in inst.devices:
            link = ddir / os.path.basename(d)
            if not link.exists():
                link.symlink_to(d)
        run(["zpool", "import", "-d", str(ddir), pool_of(inst)], timeout=300)

    def cold_cache(self, inst: Instance) -> dict:
        """Export and re-import the pool: ARC and vdev caches empty, page cache dropped."""
        run(["sync"])
        run(["zpool", "export", pool_of(inst)], timeout=300)
        drop_caches()
        self._import(inst)
        self.mount(inst)
        return {"method": "zpool export/import + drop_caches",
                "mounted": _zfs_mounted(pool_of(inst))}

    def serving_daemon(self) -> tuple[str, int] | None:
        if load_kernel_module():
            return None
        pid = fuse_daemon_pid()
        return ("zfs-fuse", pid) if pid else None

    def keep_data_uncached(self, inst: Instance) -> str | None:
        if "primarycache" in inst.spec.properties:   # the plan chose: keep it
            return f"primarycache={inst.spec.properties['primarycache']} (as the plan set)"
        run(["zfs", "set", "primarycache=metadata", pool_of(inst)], timeout=120)
        return ("primarycache=metadata (no file data in the ARC: reads reach the vdevs, but a "
                "small read fetches its whole record and prefetched data is not kept, so this "
                "is ZFS without its read cache)")

    def effective_options(self, inst: Instance) -> dict:
        info = {"implementation": self.implementation(),
                "implementation_label": self.implementation_label()}
        r = run(["zfs", "get", "-H", "-o", "property,value,source", "all", pool_of(inst)], check=False)
        props = {}
        for line in r.stdout.splitlines():
            parts = line.split("\t")
            if len(parts) == 3:
                props[parts[0]] = {"value": parts[1], "source": parts[2]}
        info["properties"] = props
        r = run(["zpool", "get", "-H", "-o", "property,value", "all", pool_of(inst)], check=False)
        info["pool_properties"] = dict(line.split("\t", 1) for line in r.stdout.splitlines()
                                       if "\t" in line)
        return info

    def capacity(self, inst: Instance) -> dict:
        info = super().capacity(inst)
        fields = ["-o", "size,allocated,free,dedupratio", pool_of(inst)]
        r = run(["zpool", "list", "-Hp", *fields], check=False)
        if not r.ok:   # zfs-fuse's zpool has no -p: sizes come rounded, e.g. 36.2M
            r = run(["zpool", "list", "-H", *fields], check=False)
        if r.ok and r.stdout.strip():
            size, alloc, free, dedup = r.stdout.split()[:4]
            info.update(pool_size_bytes=parse_size(size), pool_alloc_bytes=parse_size(alloc),
                        pool_free_bytes=parse_size(free), dedupratio=float(dedup.rstrip("x")))
        return info

    def check(self, inst: Instance) -> dict:
        """Scrub the pool and wait for it: {'clean': no errors, 'output': zpool status}."""
        run(["zpool", "scrub", pool_of(inst)], check=False, timeout=600)
        out = ""
        for _ in range(1200):
            out = run(["zpool", "status", "-v", pool_of(inst)], check=False).stdout
            if "scrub in progress" not in out:
                break
            time.sleep(0.25)
        clean = "No known data errors" in out and "DEGRADED" not in out
        return {"clean": clean, "output": out[-4000:]}

    # --- quirks asked by suites and probes ----------------------------------------
    def held(self, inst: Instance) -> bool:
        return super().held(inst) or bool(pool_of(inst))

    def used_bytes(self, inst: Instance, pool_level: bool = False) -> int:
        """ZFS accounts at transaction-group sync, so poll until two readings agree. The
        dataset's `used` counts compressed bytes; only the pool's `allocated` shows dedup
        savings (`pool_level`). zfs-fuse has no `zpool -p`, so pool sizes are parsed from
        the human form (3 significant digits; enough for MiB-sized checks)."""
        pool = pool_of(inst)
        read = ((lambda: parse_human(_zpool_get(pool, "allocated"))) if pool_level else
                (lambda: int(run(["zfs", "get", "-Hp", "-o", "value", "used", pool]).stdout)))
        last = -1
        for _ in range(40):
            now = read()
            if now == last:
                return now
            last = now
            time.sleep(0.5)
        return last

    def total_bytes(self, inst: Instance) -> int:
        return parse_human(_zpool_get(pool_of(inst), "size"))

    def error_counters(self, inst: Instance) -> dict:
        return {"zpool": zpool_errors(pool_of(inst))}

    def scrub(self, inst: Instance) -> dict | None:
        res = self.check(inst)            # zpool scrub + wait + status
        res["zpool"] = {k: v for k, v in zpool_errors(pool_of(inst)).items() if k != "status"}
        return res

    def export_for_offline(self, inst: Instance, check: bool = True) -> None:
        """Export the pool, so nothing of it stays in the ARC."""
        pool = pool_of(inst)
        if pool and (check or zpool_imported(pool)):
            run(["zpool", "export", pool], check=check, timeout=300)

    def metadata_locations(self, inst: Instance, obj: int) -> list[tuple[int, int]]:
        """Image offsets of every copy (DVA) of ZPL object `obj`'s data blocks, from `zdb -e`
        on the exported pool. A mirror keeps each DVA at the same offset on every child."""
        ddir = inst.workdir / f"zdb-{inst.label}"
        shutil.rmtree(ddir, ignore_errors=True)     # only this instance's devices, never stale links
        ddir.mkdir()
        for d in inst.devices:
            (ddir / os.path.basename(d)).symlink_to(d)
        # zdb's "pool obj" means the MOS's object, not the file system's: dump everything and
        # read the object from the ZPL dataset's section
        r = run(["zdb", "-e", "-p", str(ddir), "-dddddd", pool_of(inst)], check=False, timeout=300)
        zpl = r.stdout.split("[ZPL]", 1)[1] if "[ZPL]" in r.stdout else ""
        out = []
        for block in re.split(r"\n\s+Object\s+lvl[^\n]*\n", zpl)[1:]:
            if int(block.split(None, 1)[0]) != obj:
                continue
            for line in block.splitlines():
                if " L0 " in line:
                    for m in re.finditer(r"\b0:([0-9a-f]+):([0-9a-f]+)\b", line.split(" L0 ", 1)[1]):
                        off = ZFS_LABELS + int(m[1], 16)
                        out += [(i, off) for i in range(len(inst.devices))]
        return out

    def grow_command(self, inst: Instance) -> list[str] | None:
        return ["zpool", "online", "-e", pool_of(inst), inst.devices[0]]

    def reopen_devices(self, inst: Instance) -> str | None:
        inst.cold_cache()
        return "zpool export/import"

    def snapshots(self) -> bool:
        return True

    def snapshot(self, inst: Instance, name: str) -> str:
        run(["zfs", "snapshot", f"{pool_of(inst)}@{name}"])
        return f"zfs snapshot {pool_of(inst)}@{name}"

    def read_snapshot(self, inst: Instance, name: str, relpath: str) -> tuple[bytes, str]:
        # a clone, not .zfs/snapshot: zfs-fuse has no working .zfs directory
        pool = pool_of(inst)
        run(["zfs", "clone", f"{pool}@{name}", f"{pool}/{name}-clone"])
        try:
            data = (inst.mountpoint / f"{name}-clone" / relpath).read_bytes()
        finally:
            run(["zfs", "destroy", "-f", f"{pool}/{name}-clone"], check=False)
        return data, "read back through zfs clone"

    def compression_enable(self) -> Enable | None:
        return Enable(properties={"compression": "on"})

    def dedup_enable(self) -> Enable | None:
        return Enable(properties={"dedup": "on"})

    def keep_across_crash(self, inst: Instance) -> dict:
        """keep=True: cleanup after a crash exports the pool, never destroys it."""
        pool = pool_of(inst)
        if pool:
            state.forget("zpool", pool)
            state.note("zpool", pool, keep=True)
        return {"pool": pool}

    def resume_kept(self, inst: Instance, journal: dict) -> None:
        inst.driver_data["pool"] = pool = journal.get("pool")
        if pool:
            state.note("zpool", pool, keep=True)

    def set_aside_kept(self, inst: Instance) -> None:
        self.export_for_offline(inst, check=False)
        if pool_of(inst):
            state.forget("zpool", pool_of(inst))

    def session_end(self) -> None:
        if not load_kernel_module():
            stop_fuse_daemon_if_ours()


def pool_of(inst: Instance) -> str | None:
    """The instance's pool name, once mkfs (or a kept journal) gave it one."""
    return inst.driver_data.get("pool")


def _zfs_mounted(pool: str, timeout: float = 120) -> bool:
    r = run(["zfs", "get", "-H", "-o", "value", "mounted", pool], check=False, timeout=timeout)
    return r.stdout.strip() == "yes"


ZFS_LABELS = 4 << 20     # a vdev's first 4 MiB: two labels and the boot block; DVAs start after


def zpool_errors(pool: str) -> dict:
    """Error counters of `zpool status -v`: the largest READ/WRITE/CKSUM over its rows
    (zfs-fuse does not always roll leaf errors up to the pool row), bytes repaired,
    and the 'errors:' line."""
    r = run(["zpool", "status", "-v", pool], check=False)
    counts = {"read": 0, "write": 0, "cksum": 0}
    repaired = []
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 5 and all(p.isdigit() for p in parts[2:5]):
            for key, val in zip(counts, parts[2:5]):
                counts[key] = max(counts[key], int(val))
            if "repaired" in parts:
                repaired.append(parts[parts.index("repaired") - 1])
    errors = next((ln.split(":", 1)[1].strip() for ln in r.stdout.splitlines()
                   if ln.strip().startswith("errors:")), "")
    return {**counts, "repaired": repaired, "errors": errors, "status": r.stdout}


def _zpool_get(pool: str, prop: str) -> str:
    # `zpool list -H -o` works in zfs-fuse and OpenZFS alike (`zpool get -o` does not)
    return run(["zpool", "list", "-H", "-o", prop, pool]).stdout.strip()


def parse_human(text: str) -> int:
    """'604K', '16.3M', '1.2G', '512' (zpool's binary suffixes) -> bytes."""
    text = text.strip().rstrip("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
    if text and text[-1].upper() in scale:
        return int(float(text[:-1]) * scale[text[-1].upper()])
    return int(float(text))


def zpool_imported(name: str, timeout: float = 60) -> bool:
    if not which("zpool"):
        return False
    r = run(["zpool", "list", "-H", "-o", "name", name], check=False, timeout=timeout)
    return r.ok


def destroy_zpool(name: str, attempts: int = 8, timeout: float = 120) -> None:
    """Destroy (else export) a pool. zfs-fuse reports 'pool is busy' for a moment
    after the last file is closed, so retry with backoff before giving up. A command
    that passes `timeout` raises TimedOut at once: its daemon is stuck, and only
    replacing the daemon helps (ZfsDriver), not trying again."""
    err = ""
    for i in range(attempts):
        if not zpool_imported(name, timeout):
            return
        run(["zfs", "umount", "-f", name], check=False, timeout=timeout)
        r = run(["zpool", "destroy", "-f", name], check=False, timeout=timeout)
        if r.ok or not zpool_imported(name, timeout):
            return
        err = r.stderr.strip()
        time.sleep(0.25 * (i + 1))
    run(["zpool", "export", "-f", name], check=False, timeout=timeout)
    if zpool_imported(name, timeout):
        raise TeardownFailed(f"cannot destroy zpool {name}: {err}")


@state.handler("zpool")
def _zpool(e: dict) -> None:
    if e.get("keep"):   # its image is kept for a resume (fslab/workloads/support/keptfs.py): export, never destroy
        if zpool_imported(e["id"]):
            run(["zpool", "export", "-f", e["id"]], check=False, timeout=120)
        if zpool_imported(e["id"]):
            raise TeardownFailed(f"cannot export zpool {e['id']}")
        return
    destroy_zpool(e["id"])


# what the documentation claims (fslab/features/catalog.py lists the features)
ZFS_FUSE = "zfs(8), zpool(8) of zfs-fuse 0.7.0"
FUSE_FEATURE_CLAIMS = {
    "data_checksums": FeatureClaim("yes", "checksum=on (fletcher4 in pool v23); sha256 optional", ZFS_FUSE),
    "metadata_checksums": FeatureClaim("yes", "every block pointer carries its child's checksum", ZFS_FUSE),
    "copy_on_write": FeatureClaim("yes", "always", ZFS_FUSE),
    "journaling": FeatureClaim("no", "no journal: CoW transaction groups, plus the ZIL for sync writes",
                     ZFS_FUSE),
    "snapshots": FeatureClaim("yes", "zfs snapshot; in zfs-fuse the .zfs directory does not work, read "
                    "snapshots through zfs clone", "zfs(8); /usr/share/doc/zfs-fuse/STATUS"),
    "scrub": FeatureClaim("yes", "zpool scrub; self-heals with mirror/raidz or copies>1", ZFS_FUSE),
    "raid": FeatureClaim("yes", "mirror, raidz1/2/3", ZFS_FUSE),
    "resilvering": FeatureClaim("yes", "zpool replace/attach resilvers only allocated blocks", ZFS_FUSE),
    "online_grow": FeatureClaim("yes", "zpool online -e (or autoexpand=on) after the device grows", ZFS_FUSE),
    "online_shrink": FeatureClaim("no", "vdevs cannot shrink or be removed (pool v23)", ZFS_FUSE),
    "max_file_size": FeatureClaim("yes", "16 EiB", ZFS_FUSE),
    "max_volume_size": FeatureClaim("yes", "256 ZiB per pool (2^78 bytes)", ZFS_FUSE),
    "extents": FeatureClaim("no", "not extents: variable-size blocks up to recordsize", ZFS_FUSE),
    "delayed_allocation": FeatureClaim("yes", "allocation when the transaction group syncs", ZFS_FUSE),
    "deduplication": FeatureClaim("yes", "in-line, dedup=on (pool v21+); the dedup table wants lots of RAM",
                        ZFS_FUSE),
    "compression": FeatureClaim("yes", "compression=on|lzjb|gzip-N|zle (no lz4/zstd before feature flags)",
                      ZFS_FUSE),
    "reflinks": FeatureClaim("no", "no block cloning before OpenZFS 2.2", ZFS_FUSE),
    "fallocate": FeatureClaim("no", "fallocate(2) through FUSE is not implemented (EOPNOTSUPP)", ZFS_FUSE),
    "inline_small_files": FeatureClaim("no", "embedded data needs feature flags (pool v5000)", ZFS_FUSE),
    "reserved_space": FeatureClaim("partial", "the pool keeps a small share back for its own metadata",
                         ZFS_FUSE),
    "direct_io": FeatureClaim("partial", "O_DIRECT opens succeed, but data still goes through the ARC",
                    ZFS_FUSE),
    "trim": FeatureClaim("no", "no TRIM in pool v23 / zfs-fuse", ZFS_FUSE),
    "tunable_block_size": FeatureClaim("yes", "recordsize=512..128K per dataset; ashift per vdev", ZFS_FUSE),
}

ZFS = "zfsprops(7), zpool-features(7), zpoolprops(7) of OpenZFS 2.x"
OPENZFS = "zfs(8), zpool(8) of OpenZFS 2.x"
KERNEL_FEATURE_CLAIMS = {
    # what zfs-fuse's pages say and OpenZFS keeps, cited from OpenZFS's own pages (a report
    # on OpenZFS citing zfs-fuse 0.7.0 reads as if the claim were about the old port)
    **{k: FeatureClaim(c.status, c.note, OPENZFS if c.ref == ZFS_FUSE else c.ref)
       for k, c in FUSE_FEATURE_CLAIMS.items()},
    "data_checksums": FeatureClaim("yes", "checksum=on (fletcher4); sha256, sha512, skein, edonr, blake3 (2.2)",
                         ZFS),
    "snapshots": FeatureClaim("yes", "zfs snapshot; readable under .zfs/snapshot", ZFS),
    "online_shrink": FeatureClaim("partial", "no vdev shrink; top-level mirror/single vdevs can be removed "
                        "(device_removal, 0.8+)", "zpool-remove(8)"),
    "compression": FeatureClaim("yes", "compression=on (lz4 since 0.6.5 default)|gzip-N|zle|zstd (2.0+)", ZFS),
    "reflinks": FeatureClaim("partial", "block cloning, OpenZFS 2.2+ (feature@block_cloning); FICLONE works "
                   "within one pool", "zpool-features(7)"),
    "fallocate": FeatureClaim("partial", "mode 0 accepted since 0.8 but no space is reserved (CoW)",
                    "OpenZFS 0.8 release notes"),
    "inline_small_files": FeatureClaim("yes", "feature@embedded_data stores blocks that compress to <= 112 "
                             "bytes in the block pointer", "zpool-features(7)"),
    "direct_io": FeatureClaim("partial", "O_DIRECT bypasses the ARC only since 2.3 (direct=standard)", ZFS),
    "trim": FeatureClaim("yes", "zpool trim, autotrim=on (0.8+)", "zpool-trim(8)"),
    "tunable_block_size": FeatureClaim("yes", "recordsize=512..16M (large_blocks) per dataset; ashift per vdev",
                             ZFS),
}


# The options worth trying for performance (Driver.catalogue): dataset properties (zfs create
# -O) and pool properties (zpool create -o). zfs-fuse 0.7.0 is pool version 23: what came
# later (sync, lz4, zstd, xattr=sa, ashift, ...) is OpenZFS's only ("zfs").
OPENZFS_ONLY = ("zfs",)
ZFS_PROPS = "zfs(8) of zfs-fuse 0.7.0, zfsprops(7) of OpenZFS"
CATALOGUE = (
    Option("recordsize", "property", ("recordsize=4k", "recordsize=8k", "recordsize=16k",
                                      "recordsize=32k", "recordsize=64k"), "safe",
           "the largest block of a file (default 128k): small records stop small random "
           "writes from rewriting a whole 128k record", ZFS_PROPS),
    Option("recordsize", "property", ("recordsize=256k", "recordsize=1M"), "safe",
           "larger records for large sequential files (large_blocks)", "zfsprops(7)",
           implementations=OPENZFS_ONLY),
    Option("compression", "property", ("compression=on", "compression=lzjb", "compression=zle",
                                       "compression=gzip-1", "compression=gzip"), "safe",
           "transparent compression (less I/O, more CPU)", ZFS_PROPS),
    Option("compression", "property", ("compression=lz4", "compression=zstd"), "safe",
           "transparent compression with the fast modern codecs", "zfsprops(7)",
           implementations=OPENZFS_ONLY),
    Option("atime", "property", ("atime=off",), "safe",
           "reads no longer write the access time", ZFS_PROPS),
    Option("logbias", "property", ("logbias=throughput",), "safe",
           "synchronous writes go to the pool, not the intent log first: better throughput, "
           "higher fsync latency", ZFS_PROPS),
    Option("checksum", "property", ("checksum=sha256",), "safe",
           "a cryptographic checksum (default fletcher4): more CPU per block", ZFS_PROPS),
    Option("checksum", "property", ("checksum=off",), "trade",
           "no checksums computed on data writes", ZFS_PROPS,
           trades="no data checksums: silent corruption goes undetected and cannot self-heal"),
    Option("primarycache", "property", ("primarycache=metadata",), "safe",
           "the ARC keeps metadata only: reads of data reach the disks", ZFS_PROPS),
    Option("sync", "property", ("sync=disabled",), "trade",
           "fsync and O_SYNC return before the data is on disk", "zfsprops(7)",
           trades="a crash or power cut loses up to ~5 s of writes that applications were "
           "told are durable", implementations=OPENZFS_ONLY),
    Option("sync", "property", ("sync=always",), "safe",
           "every write is synchronous (through the intent log)", "zfsprops(7)",
           implementations=OPENZFS_ONLY),
    Option("xattr", "property", ("xattr=sa",), "safe",
           "extended attributes stored in the dnode instead of hidden directories",
           "zfsprops(7)", implementations=OPENZFS_ONLY),
    Option("dnodesize", "property", ("dnodesize=auto",), "safe",
           "larger dnodes hold more system attributes inline", "zfsprops(7)",
           implementations=OPENZFS_ONLY),
    Option("redundant_metadata", "property", ("redundant_metadata=most",), "trade",
           "fewer extra copies of metadata written", "zfsprops(7)",
           trades="a damaged single-copy metadata block loses data that another copy would "
           "have saved", implementations=OPENZFS_ONLY),
    # zfs-fuse takes ashift at zpool create but `zpool get` does not list it (the probe
    # says so in a note); OpenZFS lists it
    Option("ashift", "pool_property", ("ashift=12",), "safe",
           "4 KiB sectors: no read-modify-write on 4K-sector disks, more space for tiny "
           "blocks", "zpool(8) of zfs-fuse 0.7.0 (-o ashift), zpoolprops(7)"),
)
