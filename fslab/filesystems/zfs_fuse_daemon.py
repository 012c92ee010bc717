"""The zfs-fuse daemon: ZFS in user space, where this kernel has no zfs module.

fslab starts it when a pool is needed and nothing runs it, notes it in the state
file (so `fslab cleanup` stops it), replaces it when it hangs (only one fslab
started) and stops it at the end of the run when no pool is left in use.

One daemon serves every fslab run on the host, so whether fslab started it is also
written host-wide (`started_mark()`): when the run that started it ends while another
run still has a pool, the daemon stays, and the last fslab run to end stops it.
Starting and stopping hold a host-wide lock (`_daemon_lock`): two runs that found no
daemon at the same moment each started one, and the one without the mark outlived both.
Every fslab process that uses the daemon holds a shared lock on a host-wide users file
from its first ensure_fuse_daemon() to its end (the kernel drops it when the process
dies): the daemon is stopped only when no other process holds it. "No pool in use" alone
let one run stop the daemon another had just started and not yet made its pool on.
"""
from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from fslab.errors import StepFailed
from fslab.system import state
from fslab.system.locks import exclusive
from fslab.system.proc import run
from fslab.system.teardown import BUSY_CHECKS, stop_pid
from fslab.system.mounts import mounts


LOCK_WAIT_S = 300    # a start or stop takes seconds; its own steps have their limits


@contextmanager
def _daemon_lock() -> Iterator[None]:
    """Host-wide (beside the started mark): one fslab process at a time starts or stops
    the daemon; a failed step when another holds it past LOCK_WAIT_S."""
    with exclusive(started_mark().with_suffix(".lock"), LOCK_WAIT_S, "zfs-fuse daemon"):
        yield


_users_file = None   # this process's open users file, holding its shared lock


def users_path() -> Path:
    return started_mark().with_suffix(".users")


def use_daemon() -> None:
    """Count this process among the daemon's users (until it ends or stops using it).
    Called under _daemon_lock, where nobody holds the exclusive lock."""
    global _users_file
    if _users_file is None:
        _users_file = open(users_path(), "a+")
    try:
        fcntl.flock(_users_file, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:   # cannot happen under _daemon_lock; never block on it
        pass


def _stop_using_daemon() -> None:
    global _users_file
    if _users_file is not None:
        _users_file.close()    # drops the lock
        _users_file = None


def other_users() -> bool:
    """Does another fslab process use the daemon now? (Call after _stop_using_daemon.)"""
    with open(users_path(), "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False


def fuse_daemon_pids() -> list[int]:
    """Every live zfs-fuse daemon (normally one; a zombie is none)."""
    out = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            if comm.read_text().strip() == "zfs-fuse":
                stat = (comm.parent / "stat").read_text()
                if stat[stat.rindex(")") + 2:].split()[0] not in ("Z", "X"):
                    out.append(int(comm.parent.name))
        except (OSError, ValueError):
            continue
    return sorted(out)


def fuse_daemon_pid() -> int | None:
    """The live zfs-fuse daemon (a killed one not yet reaped is a zombie: not it)."""
    pids = fuse_daemon_pids()
    return pids[0] if pids else None


def responsive(timeout: float = 20) -> bool:
    """Does the zfs-fuse daemon answer? (It can deadlock, e.g. on a damaged pool.)"""
    try:
        return run(["zpool", "list", "-H", "-o", "name"], check=False, timeout=timeout).ok
    except StepFailed:   # timed out
        return False


def started_mark() -> Path:
    """Host-wide: the pid of the zfs-fuse daemon an fslab run started (cleared at boot)."""
    return Path("/run/fslab-zfs-fuse.pid") if os.geteuid() == 0 else state.state_dir() / "zfs-fuse.started"


def _started_by_fslab(pid: int) -> bool:
    try:
        return int(started_mark().read_text()) == pid
    except (OSError, ValueError):
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
    stale = [m.mountpoint for m in mounts() if m.fstype == "fuse.zfs"]
    for mp in stale:
        run(["umount", "-l", mp], check=False, timeout=30)
    state.forget("daemon", "zfs-fuse")


def ensure_fuse_daemon() -> bool:
    """Start zfs-fuse if it is not running (or restart it if fslab's own hung).
    True if this call started it."""
    with _daemon_lock():
        use_daemon()
        return _ensure_fuse_daemon()


def _ensure_fuse_daemon() -> bool:
    pid = fuse_daemon_pid()
    if pid and responsive():
        return False
    if pid:
        restart_hung_daemon(pid)
    pidfile = state.state_dir() / "zfs-fuse.pid"
    pidfile.unlink(missing_ok=True)
    # --no-kstat-mount: do not leave a /zfs-kstat mount behind
    # untagged: shared by every run, it is not a child cleanup should stop with its starter
    run(["zfs-fuse", "--pidfile", str(pidfile), "--no-kstat-mount"], env=state.untagged_env())
    for _ in range(100):
        if pidfile.exists() and pidfile.read_text().strip():
            pid = int(pidfile.read_text().strip())
            state.forget("daemon", "zfs-fuse")   # a daemon of ours that died on its own
            state.note("daemon", "zfs-fuse", daemon_pid=pid, match="zfs-fuse", busy_check="zpool")
            started_mark().write_text(str(pid))
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
    """Started by this run (its state file) or by another fslab run on this host."""
    return _started_by_fslab(pid) or any(
        e["kind"] == "daemon" and e["id"] == "zfs-fuse" and int(e["daemon_pid"]) == pid
        for e in state.entries())


def replace_hung_daemon(why: str) -> str:
    """Kill the zfs-fuse daemon fslab started and start a fresh one; the pools the old one
    served are gone with it (created with cachefile=none: a new daemon imports none of
    them), so their teardown is only their devices. Says what was done; raises
    StepFailed if the daemon is not fslab's to kill."""
    pid = fuse_daemon_pid()
    with _daemon_lock():
        if pid is None:
            _ensure_fuse_daemon()
            return f"{why}; zfs-fuse had exited: started a fresh one (pid {fuse_daemon_pid()})"
        restart_hung_daemon(pid)
        _ensure_fuse_daemon()
    return f"{why}: killed zfs-fuse (pid {pid}) and started a fresh one (pid {fuse_daemon_pid()})"


def pools_in_use() -> list[str]:
    """Imported, healthy pools. Any of them means someone (another fslab with its
    own state file, or the user) still needs the zfs-fuse daemon."""
    r = run(["zpool", "list", "-H", "-o", "name,health"], check=False, timeout=60)
    return [ln.split("\t")[0] for ln in r.stdout.splitlines()
            if ln.strip() and not ln.endswith("FAULTED")]


def stop_fuse_daemon_if_ours() -> None:
    """Stop zfs-fuse when an fslab run (this one or another) started it, no other fslab
    process uses it and no pool is left in use; a daemon the user started is never stopped."""
    with _daemon_lock():
        _stop_using_daemon()
        if other_users():
            return    # another run needs it: the last one to end stops it
        _stop_fuse_daemon_if_ours()


def _stop_fuse_daemon_if_ours() -> None:
    mine = [e for e in state.entries() if e["kind"] == "daemon" and e["id"] == "zfs-fuse"]
    live = fuse_daemon_pid()
    if not mine and not (live and _started_by_fslab(live)):
        return
    if live and pools_in_use():
        return        # another run (or the user) still needs it: the last one to end stops it
    for pid in {live, *(int(e["daemon_pid"]) for e in mine)} - {None}:
        if daemon_is_ours(pid) and Path(f"/proc/{pid}/comm").exists() \
                and "zfs-fuse" in Path(f"/proc/{pid}/comm").read_text():
            stop_pid(pid, timeout=30)
    state.forget("daemon", "zfs-fuse")
    started_mark().unlink(missing_ok=True)


BUSY_CHECKS["zpool"] = lambda: [f"pool {p}" for p in pools_in_use()] + (
    ["another running fslab process"] if other_users() else [])
