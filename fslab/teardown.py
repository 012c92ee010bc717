"""Teardown of the core resource kinds, shared by normal teardown and `fslab cleanup`.

Each function is idempotent: tearing down something already gone is success.
"""
from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

from fslab import state
from fslab.proc import run, which


def is_mounted(path: str) -> bool:
    from fslab.filesystems.mounts import is_mounted as mounted
    return mounted(path)


def umount(path: str, attempts: int = 5) -> None:
    for i in range(attempts):
        if not is_mounted(path):
            return
        r = run(["umount", path], check=False, timeout=60)
        if r.ok:
            return
        time.sleep(0.3 * (i + 1))   # busy: a process may still be closing files
    run(["umount", "-l", path], check=False, timeout=60)   # last resort: lazy, never leave it mounted
    if is_mounted(path):
        raise RuntimeError(f"cannot unmount {path}")


def loop_attached(dev: str) -> bool:
    name = os.path.basename(dev)
    return Path(f"/sys/block/{name}/loop/backing_file").exists()


def detach_loop(dev: str, image: str | None = None) -> None:
    if not loop_attached(dev):
        return
    if image:  # the device number may have been reused by someone else: check
        backing = Path(f"/sys/block/{os.path.basename(dev)}/loop/backing_file").read_text().strip()
        if os.path.realpath(backing.removesuffix(" (deleted)")) != os.path.realpath(image):
            return
    for i in range(10):
        r = run(["losetup", "-d", dev], check=False, timeout=60)
        if r.ok or not loop_attached(dev):
            return
        time.sleep(0.2 * (i + 1))
    raise RuntimeError(f"cannot detach {dev}: {r.stderr.strip()}")


def zpool_imported(name: str, timeout: float = 60) -> bool:
    if not which("zpool"):
        return False
    r = run(["zpool", "list", "-H", "-o", "name", name], check=False, timeout=timeout)
    return r.ok


def destroy_zpool(name: str, attempts: int = 8, timeout: float = 120) -> None:
    """Destroy (else export) a pool. zfs-fuse reports 'pool is busy' for a moment
    after the last file is closed, so retry with backoff before giving up. A command
    that passes `timeout` raises TimedOut at once: its daemon is stuck, and only
    replacing the daemon helps (fslab/filesystems/zfs.py), not trying again."""
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
        raise RuntimeError(f"cannot destroy zpool {name}: {err}")


def stop_pid(pid: int, timeout: float = 15) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        # reap if it is our child
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)


@state.handler("mount")
def _mount(e: dict) -> None:
    umount(e["id"])


@state.handler("loop")
def _loop(e: dict) -> None:
    detach_loop(e["id"], e.get("image"))


@state.handler("zpool")
def _zpool(e: dict) -> None:
    if e.get("keep"):   # its image is kept for a resume (fslab/keptfs.py): export, never destroy
        if zpool_imported(e["id"]):
            run(["zpool", "export", "-f", e["id"]], check=False, timeout=120)
        if zpool_imported(e["id"]):
            raise RuntimeError(f"cannot export zpool {e['id']}")
        return
    destroy_zpool(e["id"])


@state.handler("daemon")
def _daemon(e: dict) -> None:
    if e.get("busy_check") == "zpool":
        from fslab.filesystems.zfs import pools_in_use
        busy = pools_in_use()
        if busy:
            raise RuntimeError(f"left running: it still serves pool(s) {', '.join(busy)}")
    pid = int(e["daemon_pid"])
    cmdline = Path(f"/proc/{pid}/cmdline")
    # only stop it if that pid is still the daemon we started
    if cmdline.exists() and e.get("match", "") in cmdline.read_bytes().decode(errors="replace"):
        stop_pid(pid)


@state.handler("file")
def _file(e: dict) -> None:
    Path(e["id"]).unlink(missing_ok=True)


@state.handler("dir")
def _dir(e: dict) -> None:
    p = Path(e["id"])
    if p.exists():
        if is_mounted(str(p)):
            raise RuntimeError(f"{p} is still a mount point")
        shutil.rmtree(p, ignore_errors=True)
