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
PRIORITY = {"guest": 0, "fio-server": 5, "app-server": 6, "mount": 10, "dm": 15, "zpool": 20, "loop": 30,
            "daemon": 40, "netns": 45, "file": 50, "dir": 60}

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
    with _locked() as entries:
        if not any(e["kind"] == kind and e["id"] == ident for e in entries):
            entries.append({"kind": kind, "id": ident, "pid": os.getpid(), **extra})


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
