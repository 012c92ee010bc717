"""ZFS: kernel OpenZFS when this kernel has the zfs module, else Debian's zfs-fuse.

A "mkfs" here is `zpool create` of a single-vdev pool (mirror with devices > 1)
with the plan's dataset properties (-O) and pool properties (-o) passed through.
zfs-fuse's daemon is started when needed and stopped at the end of the run,
only if fslab started it and nobody else still uses it.
"""
from __future__ import annotations

import functools
import os
import time
from pathlib import Path

from fslab.system import state
from fslab.system.fuse import abort_fuse
from fslab.errors import StepFailed, TeardownFailed, TimedOut
from fslab.filesystems import register
from fslab.filesystems.base import Availability, Driver, Instance, drop_caches
from fslab.system.proc import is_root, run, which
from fslab.plan.profiles import parse_size
from fslab.system.teardown import BUSY_CHECKS, stop_pid

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


def fuse_daemon_pid() -> int | None:
    """The live zfs-fuse daemon (a killed one not yet reaped is a zombie: not it)."""
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == "zfs-fuse":
                stat = (comm.parent / "stat").read_text()
                if stat[stat.rindex(")") + 2:].split()[0] not in ("Z", "X"):
                    return int(comm.parent.name)
        except (OSError, ValueError):
            continue
    return None


def responsive(timeout: float = 20) -> bool:
    """Does the zfs-fuse daemon answer? (It can deadlock, e.g. on a damaged pool.)"""
    try:
        return run(["zpool", "list", "-H", "-o", "name"], check=False, timeout=timeout).ok
    except StepFailed:   # timed out
        return False


def restart_hung_daemon(pid: int) -> None:
    """Kill a hung zfs-fuse that fslab started, and unmount what it left stale."""
    if not daemon_is_ours(pid):
        raise StepFailed(f"the zfs-fuse daemon (pid {pid}) does not respond and was not started "
                         "by fslab: restart it (or kill it and run `fslab cleanup`)")
    os.kill(pid, 9)
    for _ in range(50):
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.1)
    from fslab.system.mounts import mounts
    stale = [m.mountpoint for m in mounts() if m.fstype == "fuse.zfs"]
    for mp in stale:
        run(["umount", "-l", mp], check=False, timeout=30)
    state.forget("daemon", "zfs-fuse")


def ensure_fuse_daemon() -> bool:
    """Start zfs-fuse if it is not running (or restart it if fslab's own hung).
    True if this call started it."""
    pid = fuse_daemon_pid()
    if pid and responsive():
        return False
    if pid:
        restart_hung_daemon(pid)
    pidfile = state.state_dir() / "zfs-fuse.pid"
    pidfile.unlink(missing_ok=True)
    # --no-kstat-mount: do not leave a /zfs-kstat mount behind
    run(["zfs-fuse", "--pidfile", str(pidfile), "--no-kstat-mount"])
    for _ in range(100):
        if pidfile.exists() and pidfile.read_text().strip():
            pid = int(pidfile.read_text().strip())
            state.forget("daemon", "zfs-fuse")   # a daemon of ours that died on its own
            state.note("daemon", "zfs-fuse", daemon_pid=pid, match="zfs-fuse", busy_check="zpool")
            break
        time.sleep(0.05)
    else:
        raise StepFailed("zfs-fuse did not start (no pid file)")
    for _ in range(100):   # ready when zpool can talk to it
        if run(["zpool", "list"], check=False, timeout=10).ok:
            return True
        time.sleep(0.1)
    raise StepFailed("zfs-fuse started but zpool cannot reach it")


def daemon_is_ours(pid: int) -> bool:
    return any(e["kind"] == "daemon" and e["id"] == "zfs-fuse" and int(e["daemon_pid"]) == pid
               for e in state.entries())


def replace_hung_daemon(why: str) -> str:
    """Kill the zfs-fuse daemon fslab started and start a fresh one; the pools the old one
    served are gone with it (created with cachefile=none: a new daemon imports none of
    them), so their teardown is only their devices. Says what was done; raises
    StepFailed if the daemon is not fslab's to kill."""
    pid = fuse_daemon_pid()
    if pid is None:
        ensure_fuse_daemon()
        return f"{why}; zfs-fuse had exited: started a fresh one (pid {fuse_daemon_pid()})"
    restart_hung_daemon(pid)
    ensure_fuse_daemon()
    return f"{why}: killed zfs-fuse (pid {pid}) and started a fresh one (pid {fuse_daemon_pid()})"


def pools_in_use() -> list[str]:
    """Imported, healthy pools. Any of them means someone (another fslab with its
    own state file, or the user) still needs the zfs-fuse daemon."""
    r = run(["zpool", "list", "-H", "-o", "name,health"], check=False, timeout=60)
    return [ln.split("\t")[0] for ln in r.stdout.splitlines()
            if ln.strip() and not ln.endswith("FAULTED")]


def stop_fuse_daemon_if_ours() -> None:
    """Stop zfs-fuse when fslab started it and no live fslab process still has a pool."""
    mine = [e for e in state.entries() if e["kind"] == "daemon" and e["id"] == "zfs-fuse"]
    if not mine:
        return
    if pools_in_use():
        return
    pid = mine[0]["daemon_pid"]
    if Path(f"/proc/{pid}/comm").exists() and "zfs-fuse" in Path(f"/proc/{pid}/comm").read_text():
        stop_pid(int(pid), timeout=30)
    state.forget("daemon", "zfs-fuse")


@register
class Zfs(Driver):
    name = "zfs"
    fstype = "zfs"
    packages = ["zfs-fuse"]
    min_bytes = 128 << 20

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
        inst.pool = f"fslab{os.getpid()}x{_counter}"
        argv = ["zpool", "create", "-f", "-m", "none"]
        if "cachefile" not in inst.spec.pool_properties:
            argv += ["-o", "cachefile=none"]   # never re-imported behind fslab's back
        for k, v in inst.spec.pool_properties.items():
            argv += ["-o", f"{k}={v}"]
        for k, v in inst.spec.properties.items():
            argv += ["-O", f"{k}={v}"]
        argv += inst.spec.mkfs_options
        argv.append(inst.pool)
        if len(inst.devices) > 1:
            argv.append("mirror")
        argv += inst.devices
        state.note("zpool", inst.pool)
        run(argv, timeout=600)

    def mount(self, inst: Instance) -> None:
        if not zpool_imported(inst.pool):
            self._import(inst)
        # mount options (e.g. atime=off) go as properties too; plain "-o" for zfs mount
        current = run(["zfs", "get", "-H", "-o", "value", "mountpoint", inst.pool], check=False)
        if current.stdout.strip() != str(inst.mountpoint):
            # setting it again after an import remounts, which zfs-fuse may refuse as busy
            run(["zfs", "set", f"mountpoint={inst.mountpoint}", inst.pool])
        if not _zfs_mounted(inst.pool):
            argv = ["zfs", "mount"]
            if inst.spec.mount_options:
                argv += ["-o", ",".join(inst.spec.mount_options)]
            run(argv + [inst.pool])

    def unmount(self, inst: Instance) -> None:
        self._through_daemon(inst, lambda: self._unmount(inst, TEARDOWN_TIMEOUT_S))

    def _unmount(self, inst: Instance, timeout: float) -> None:
        if not (inst.pool and zpool_imported(inst.pool, timeout)):
            return
        for i in range(8):   # zfs-fuse is briefly busy after the last close
            if not _zfs_mounted(inst.pool, timeout) or run(["zfs", "umount", inst.pool],
                                                            check=False, timeout=timeout).ok:
                return
            time.sleep(0.25 * (i + 1))
        run(["zfs", "umount", "-f", inst.pool], timeout=timeout)

    def destroy(self, inst: Instance) -> None:
        if inst.pool:
            self._through_daemon(inst, lambda: destroy_zpool(inst.pool, timeout=TEARDOWN_TIMEOUT_S))
            state.forget("zpool", inst.pool)

    def recover_after_hang(self, inst: Instance) -> str | None:
        """After a unit hung in the pool: if zfs-fuse no longer answers, or cannot tear
        the pool down in time, replace the daemon (only one fslab started)."""
        if kernel_zfs() or not inst.pool:
            return None
        if not responsive(timeout=10):
            return self._escalate(inst, "zfs-fuse did not answer `zpool list` in 10 s")
        try:
            self._unmount(inst, 30)
            destroy_zpool(inst.pool, timeout=30)
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
        return f"{done}; pool {inst.pool} forgotten with it"

    def _import(self, inst: Instance) -> None:
        # import only from this instance's own devices: a directory of symlinks to them
        ddir = inst.workdir / f"zdev-{inst.label}"
        ddir.mkdir(parents=True, exist_ok=True)
        for d in inst.devices:
            link = ddir / os.path.basename(d)
            if not link.exists():
                link.symlink_to(d)
        run(["zpool", "import", "-d", str(ddir), inst.pool], timeout=300)

    def cold_cache(self, inst: Instance) -> dict:
        """Export and re-import the pool: ARC and vdev caches empty, page cache dropped."""
        run(["sync"])
        run(["zpool", "export", inst.pool], timeout=300)
        drop_caches()
        self._import(inst)
        self.mount(inst)
        return {"method": "zpool export/import + drop_caches",
                "mounted": _zfs_mounted(inst.pool)}

    def serving_daemon(self) -> tuple[str, int] | None:
        if load_kernel_module():
            return None
        pid = fuse_daemon_pid()
        return ("zfs-fuse", pid) if pid else None

    def keep_data_uncached(self, inst: Instance) -> str | None:
        if "primarycache" in inst.spec.properties:   # the plan chose: keep it
            return f"primarycache={inst.spec.properties['primarycache']} (as the plan set)"
        run(["zfs", "set", "primarycache=metadata", inst.pool], timeout=120)
        return ("primarycache=metadata (no file data in the ARC: reads reach the vdevs, but a "
                "small read fetches its whole record and prefetched data is not kept, so this "
                "is ZFS without its read cache)")

    def effective_options(self, inst: Instance) -> dict:
        info = {"implementation": self.implementation(),
                "implementation_label": self.implementation_label()}
        r = run(["zfs", "get", "-H", "-o", "property,value,source", "all", inst.pool], check=False)
        props = {}
        for line in r.stdout.splitlines():
            parts = line.split("\t")
            if len(parts) == 3:
                props[parts[0]] = {"value": parts[1], "source": parts[2]}
        info["properties"] = props
        r = run(["zpool", "get", "-H", "-o", "property,value", "all", inst.pool], check=False)
        info["pool_properties"] = dict(line.split("\t", 1) for line in r.stdout.splitlines()
                                       if "\t" in line)
        return info

    def capacity(self, inst: Instance) -> dict:
        info = super().capacity(inst)
        fields = ["-o", "size,allocated,free,dedupratio", inst.pool]
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
        run(["zpool", "scrub", inst.pool], check=False, timeout=600)
        out = ""
        for _ in range(1200):
            out = run(["zpool", "status", "-v", inst.pool], check=False).stdout
            if "scrub in progress" not in out:
                break
            time.sleep(0.25)
        clean = "No known data errors" in out and "DEGRADED" not in out
        return {"clean": clean, "output": out[-4000:]}

    def session_end(self) -> None:
        if not load_kernel_module():
            stop_fuse_daemon_if_ours()


def _zfs_mounted(pool: str, timeout: float = 120) -> bool:
    r = run(["zfs", "get", "-H", "-o", "value", "mounted", pool], check=False, timeout=timeout)
    return r.stdout.strip() == "yes"


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



BUSY_CHECKS["zpool"] = lambda: [f"pool {p}" for p in pools_in_use()]
