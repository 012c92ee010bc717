"""Teardown of the core resource kinds, shared by normal teardown and `fslab cleanup`.

Each function is idempotent: tearing down something already gone is success.
"""
from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path
from typing import Callable

from fslab.errors import TeardownFailed
from fslab.system import state
from fslab.system.proc import run

# A daemon's entry may name a check of what it still serves (e.g. "zpool": pools in use);
# the module that starts the daemon registers it, and cleanup imports that module.
BUSY_CHECKS: dict[str, Callable[[], list[str]]] = {}


def is_mounted(path: str) -> bool:
    # here, not at the top: this module loads at start-up; keeps `fslab --help` fast
    from fslab.system.mounts import is_mounted as mounted
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
        raise TeardownFailed(f"cannot unmount {path}")


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
    raise TeardownFailed(f"cannot detach {dev}: {r.stderr.strip()}")


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


def loops_backed_by(image: str) -> list[str]:
    """The loop devices over `image`, also when it was deleted after they attached (which
    `losetup -j` misses: it looks the file up)."""
    want = os.path.realpath(image)
    devs = []
    for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
        try:
            path = backing.read_text().strip().removesuffix(" (deleted)")
        except OSError:
            continue
        if os.path.realpath(path) == want:
            devs.append(f"/dev/{backing.parent.parent.name}")
    return devs


@state.handler("loopimage")
def _loop_image(e: dict) -> None:
    """Loop devices over an image whose attach was cut short (see targets/loop.attach)."""
    for dev in loops_backed_by(e["id"]):
        detach_loop(dev, e["id"])


@state.handler("daemon")
def _daemon(e: dict) -> None:
    check = BUSY_CHECKS.get(e.get("busy_check", ""))
    busy = check() if check else []
    if busy:
        raise TeardownFailed(f"left running: it still serves {', '.join(busy)}")
    pid = int(e["daemon_pid"])
    cmdline = Path(f"/proc/{pid}/cmdline")
    # only stop it if that pid is still the daemon we started
    if cmdline.exists() and e.get("match", "") in cmdline.read_bytes().decode(errors="replace"):
        stop_pid(pid)


@state.handler("file")
def _file(e: dict) -> None:
    # an image whose loop device no entry names (its fslab died before noting it)
    for dev in loops_backed_by(e["id"]):
        detach_loop(dev, e["id"])
    Path(e["id"]).unlink(missing_ok=True)


@state.handler("dir")
def _dir(e: dict) -> None:
    p = Path(e["id"])
    if p.exists():
        if is_mounted(str(p)):
            raise TeardownFailed(f"{p} is still a mount point")
        shutil.rmtree(p, ignore_errors=True)

def cleanup(only_dead_owners: bool = False, owner: int | None = None) -> tuple[list[str], list[str]]:
    """Tear down every remembered resource. Returns (done, failed) descriptions.

    only_dead_owners: leave resources of fslab processes that are still alive
    (used at the start of a run, so a concurrent run is not sabotaged).
    owner: only the resources this pid noted (a run sweeping up after itself).
    """
    _import_handlers()
    done, failed = [], []
    if owner is None:
        stopped, stuck = stop_orphans()
        done += [f"process {pid} (left by fslab {owner_pid})" for pid, owner_pid in stopped]
        failed += [f"process {pid} (left by fslab {owner_pid}): cannot be killed (stuck in the kernel?)"
                   for pid, owner_pid in stuck]
    for e in sorted(state.entries(), key=lambda e: state.PRIORITY.get(e["kind"], 99)):
        if only_dead_owners and _alive(e.get("pid"), e.get("started")):
            continue
        if owner is not None and (e.get("pid") != owner or e["kind"] == "daemon"):
            continue   # daemons are shared: their owner stops them when nobody needs them
        desc = f"{e['kind']} {e['id']}"
        fn = state._handlers.get(e["kind"])
        try:
            if fn is None:
                raise TeardownFailed(f"no teardown known for kind {e['kind']!r}")
            fn(e)
            state.forget(e["kind"], e["id"])
            done.append(desc)
        except Exception as exc:  # keep going: cleanup must do all it can
            failed.append(f"{desc}: {exc}")
    return done, failed


# Modules that register teardown for their own kinds (imported only when cleaning up).
HANDLER_MODULES = ("fslab.filesystems.zfs", "fslab.guest.qemu", "fslab.workloads.crash", "fslab.remote.server",
                   "fslab.workloads.apps.postgres")


def _import_handlers() -> None:
    import importlib
    for mod in HANDLER_MODULES:
        try:
            importlib.import_module(mod)
        except ImportError:
            pass

def _alive(pid: int | None, started: int | None = None) -> bool:
    if not pid or pid == os.getpid():
        return pid == os.getpid()
    return state.owner_alive(pid, started)


def live_owners() -> dict[int, int]:
    """pid -> how many listed resources belong to fslab processes still running."""
    owners: dict[int, int] = {}
    for e in state.entries():
        if _alive(e.get("pid"), e.get("started")):
            owners[e["pid"]] = owners.get(e["pid"], 0) + 1
    return owners


def stop_orphans(grace: float = 10) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """SIGKILL what dead fslab processes started and left running (a losetup, mkfs or fio
    that outlived a kill -9) and wait for them to exit: before the list is torn down, so
    none of them attaches or mounts afterwards what no list knows. (stopped, stuck)."""
    found = state.orphans()
    for pid, _ in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_exists(pid) for pid, _ in found):
        time.sleep(0.05)
    stuck = [f for f in found if _exists(f[0])]
    return [f for f in found if f not in stuck], stuck


def _exists(pid: int) -> bool:
    try:
        # a zombie has exited: it holds nothing any more
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
