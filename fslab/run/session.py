"""Run-wide behaviours shared by every way a run executes (local scheduler, guest, hosts).

Written once here so the three executors cannot drift: every run records the same
environment (profile, page-cache policy), SIGTERM stops a run the way Ctrl-C does,
scratch directories live in one place, and every driver used gets its session end
(e.g. the zfs-fuse daemon is stopped) even after failures.
"""
from __future__ import annotations

import os
import shlex
import signal
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable, Iterator

from fslab import filesystems
from fslab.plan import Plan
from fslab.store import Store
from fslab.system import environment


def _interrupt(signum, frame):
    raise KeyboardInterrupt


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM takes the same clean teardown path as Ctrl-C while the block runs."""
    old = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def tmp_base() -> Path:
    """Where scratch directories go: /var/tmp (disk, survives a reboot for `fslab cleanup`)
    when writable, else the system temp dir."""
    return Path("/var/tmp") if os.access("/var/tmp", os.W_OK) else Path(tempfile.gettempdir())


def scratch_dir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix, dir=tmp_base()))


def end_driver_sessions(names: Iterable[str], on_error: Callable[[str], None]) -> None:
    """Each driver's session end (if it has one); an error is reported, the others still run."""
    for name in names:
        end = getattr(filesystems.get(name), "session_end", None)
        if end:
            try:
                end()
            except Exception as e:
                on_error(f"{name} session end: {e}")


def run_environment(plan: Plan, fs_names: list[str], target: dict) -> dict:
    """What every run records of where and how it ran: the host, its tools for `fs_names`,
    the target, the profile and the page-cache policy."""
    env = environment.capture(fs_names, target)
    env["profile"] = {"name": plan.profile.name, "scaled": plan.profile.scaled,
                      "description": plan.profile.description}
    env["page_cache"] = plan.page_cache
    return env


def create_run(store: Store, plan: Plan, env: dict) -> str:
    """A new run row for `plan`, with the command line that started it."""
    return store.create_run(plan.source_text, env, name=plan.run.name,
                            command=shlex.join(["fslab", *sys.argv[1:]]),
                            profile=plan.run.profile)
