"""What fslab created and has not yet torn down, so `fslab cleanup` can after a crash.

Every resource (mount, loop device, zpool, daemon, image file, guest...) is noted
here *before* the step that creates it completes, and forgotten after its
teardown succeeds. A kill -9 therefore leaves a list `fslab cleanup` can finish.
The file is shared by concurrent fslab processes and guarded with flock, held for a read
and a write only: a holder that hangs past LOCK_S fails the waiting step instead of
stalling it forever.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Callable, Iterator

import orjson

from fslab.system.locks import exclusive

# Teardown order: lower first. Mounts go before the pools/loops under them, etc.;
# a fio server (fslab.remote) before the mounts its jobs may still hold open.
# an application's server (fslab/workloads/apps/postgres.py) before the mount it holds open
PRIORITY = {"guest": 0, "fio-server": 5, "app-server": 6, "mount": 10, "dm": 15, "zpool": 20,
            "loop": 30, "loopimage": 30, "daemon": 40, "netns": 45, "file": 50, "dir": 60}

# Set in fslab's environment at its first note, so every child (losetup, mkfs, fio) carries
# it: a child that outlives a kill -9 of fslab is found by it, and stopped by cleanup
# before it attaches or mounts what no list knows any more.
OWNER_ENV = "FSLAB_OWNER"

_handlers: dict[str, Callable[[dict], None]] = {}

LOCK_S = 60     # the lock is held for one read and one write of a small file


def state_dir() -> Path:
    env = os.environ.get("FSLAB_STATE_DIR")
    if env:
        d = Path(env)
    elif os.geteuid() == 0:
        d = Path("/run/fslab")
    else:
        d = Path(os.environ.get("XDG_RUNTIME_DIR") or Path.home() / ".cache") / "fslab"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _path() -> Path:
    return state_dir() / "resources.json"


@contextlib.contextmanager
def _locked() -> Iterator[list[dict]]:
    p = _path()
    with exclusive(p.with_suffix(".lock"), LOCK_S, "fslab's resource list"):
        entries = orjson.loads(p.read_bytes()) if p.exists() and p.stat().st_size else []
        yield entries
        tmp = p.with_suffix(".tmp")
        tmp.write_bytes(orjson.dumps(entries, option=orjson.OPT_INDENT_2))
        os.replace(tmp, p)


def note(kind: str, ident: str, **extra) -> None:
    """Remember a resource about to be created (idempotent)."""
    pid = os.getpid()
    started = process_start(pid)
    os.environ[OWNER_ENV] = f"{pid}:{started}:{state_dir()}"
    with _locked() as entries:
        if not any(e["kind"] == kind and e["id"] == ident for e in entries):
            entries.append({"kind": kind, "id": ident, "pid": pid, "started": started, **extra})


def untagged_env() -> dict[str, str]:
    """The environment for a process meant to outlive its fslab (a shared daemon): cleanup
    must not take it for a child a kill -9 left behind."""
    return {k: v for k, v in os.environ.items() if k != OWNER_ENV}


def process_start(pid: int) -> int | None:
    """When pid started (clock ticks since boot): tells a live owner from a later process
    that got the dead owner's pid."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
        return int(text[text.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def owner_alive(pid: int | None, started: int | None = None) -> bool:
    """Is the fslab process that noted an entry still running? An entry from before start
    times were noted (started None) trusts the pid alone."""
    if not pid:
        return False
    now = process_start(pid)
    if now is None:
        try:
            os.kill(pid, 0)     # no /proc entry readable: ask the kernel
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return started is None or now == started


def orphans() -> list[tuple[int, int]]:
    """(pid, dead owner's pid) of the processes fslab started under this state dir whose
    fslab is dead: children a kill -9 left running."""
    mine = str(state_dir())
    found = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            data = env.read_bytes()
        except OSError:
            continue
        key = OWNER_ENV.encode() + b"="
        for var in data.split(b"\0"):
            if var.startswith(key):
                pid, _, rest = var[len(key):].decode(errors="replace").partition(":")
                started, _, where = rest.partition(":")
                if where == mine and pid.isdigit() and int(pid) != os.getpid() and \
                        not owner_alive(int(pid), int(started) if started.isdigit() else None):
                    found.append((int(env.parent.name), int(pid)))
                break
    return found


def forget(kind: str, ident: str) -> None:
    with _locked() as entries:
        entries[:] = [e for e in entries if not (e["kind"] == kind and e["id"] == ident)]


def entries() -> list[dict]:
    with _locked() as es:
        return list(es)


def handler(kind: str):
    """Register the teardown function for a resource kind (decorator); fslab/system/teardown.py
    runs them."""
    def deco(fn: Callable[[dict], None]):
        _handlers[kind] = fn
        return fn
    return deco
