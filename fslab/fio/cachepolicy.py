"""The page-cache policy of a run: measure the device (`off`) or buffered I/O (`on`).

`off` (default of smoke, quick and standard): fio gets `direct=1` wherever the
filesystem accepts O_DIRECT, found by trying it on the filesystem itself (no
list of names). A filesystem with a data cache of its own besides the page
cache has it turned off by its driver (ZFS: primarycache=metadata; zfs-fuse
accepts O_DIRECT on recent kernels but then serves reads from its ARC). Where
O_DIRECT is refused, the page cache is dropped between fio's layout and the
measurement. What could not be done is said in the sentence stored in the
run's environment; the device counters (fslab/fio/accounting.py) show whether it
worked, unit by unit.

`on` (default of the paper profile): buffered, as the reference studies ran,
with end_fsync=1 for writes so that written data reaches the device inside the
measurement.
"""
from __future__ import annotations

import errno
import os
import tempfile
from dataclasses import dataclass
from typing import Iterable

from fslab.store.environment import RunEnvironment

def accepts_o_direct(directory: str, device: str | None = None) -> bool:
    """Does this filesystem (or this block device) open files with O_DIRECT?"""
    if device:
        try:
            os.close(os.open(device, os.O_RDONLY | os.O_DIRECT))
            return True
        except OSError:
            return False
    try:
        fd, path = tempfile.mkstemp(prefix=".fslab-odirect-", dir=directory)
    except OSError:
        return False
    os.close(fd)
    try:
        os.close(os.open(path, os.O_RDWR | os.O_DIRECT))
        return True
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP):
            raise
        return False
    finally:
        os.unlink(path)


@dataclass
class Applied:
    """What the policy did for one unit: the job options, and whether caches must be
    emptied between layout and measurement."""
    options: dict[str, str]
    cold_after_layout: bool
    description: str
    # the filesystem's driver set a property of its own for the policy (ZFS's
    # primarycache): what was in effect at mount is no longer what the unit runs on
    changed_filesystem: bool = False


def apply(policy: str, options: dict[str, str], directory: str, device: str | None,
          driver, inst) -> Applied:
    """The job options under `policy` on this filesystem, and the sentence that says so."""
    opts = dict(options)
    if policy == "on":
        return Applied(opts, False, "buffered I/O: page cache on, as the reference studies ran")
    # a cache of the filesystem's own (ZFS's ARC, also behind O_DIRECT on zfs-fuse) goes first
    own = driver.keep_data_uncached(inst) if inst is not None else None
    also = f", {own}" if own else ""
    if "direct" in opts:   # the plan chose; the counters will say what that measured
        return Applied(opts, False, f"direct={opts['direct']} as the plan set{also}", bool(own))
    if accepts_o_direct(directory, device):
        opts["direct"] = "1"   # (end_fsync stays: metadata written at the end is part of the cost)
        return Applied(opts, False, f"direct I/O (O_DIRECT){also}", bool(own))
    return Applied(opts, inst is not None,
                   f"{driver.name} refuses O_DIRECT: buffered, caches dropped between layout "
                   f"and measurement{also}; re-reads within one run can still come from the "
                   "page cache (see device ÷ fio bytes read)", bool(own))


def describe_run(environment: RunEnvironment | dict) -> list[str]:
    """Report lines: the run's policy, what it could do on each filesystem (fio jobs), and
    what every other suite did with the cache (environment "workloads", its own words)."""
    env = RunEnvironment.of(environment)
    policy = env.page_cache
    if policy is None:
        return []   # runs from before the policy existed: buffered, unknown
    fs_lines = []
    for label in sorted(env.filesystems):
        cache, served_by = env.cache_policy(label), env.daemon(label)
        if cache:
            # O_DIRECT through FUSE reaches the daemon, which has caches of its own
            daemon = (f"; served by the {served_by} daemon (O_DIRECT stops at the kernel's "
                      "page cache, not at the daemon)" if served_by and "O_DIRECT" in cache else
                      f"; served by the {served_by} daemon" if served_by else "")
            fs_lines.append(f"  {label}: {cache}{daemon}")
    suites = suite_policies(env)
    if policy == "off":
        what = "fio jobs measure the device" if fs_lines or not suites else \
            "each suite below says what it measured"
    else:
        what = "buffered, as the studies ran"
    lines = [f"page cache {policy}: {what}", *fs_lines]
    lines += [f"{suite}: {sentence}" for suite, (sentence, _) in suites.items()]
    # what a workload's size makes of its numbers (pgbench: the database beside RAM), per case
    lines += [f"{key}: {w['database_vs_ram']}" for key, w in sorted(env.workloads.items())
              if w.get("database_vs_ram")]
    daemons = env.daemons
    if daemons:
        lines.append(f"fio's own CPU figures (user %, system %, CPU seconds) leave out the "
                     f"{', '.join(daemons)} daemon's work: CPU is ranked only as operations per "
                     "CPU-second (system-wide CPU)")
    return lines


def suite_policies(environment: RunEnvironment) -> dict[str, tuple[str, bool]]:
    """suite -> (what it did with the page cache, whether its numbers may come from memory),
    as the suites recorded it (fslab/workloads/base.py Suite.cache_policy)."""
    out: dict[str, tuple[str, bool]] = {}
    for key, w in sorted(environment.workloads.items()):
        if w.get("page_cache"):
            out.setdefault(key.split(":", 1)[0], (w["page_cache"], bool(w.get("buffered"))))
    return out


def answer_note(environments: Iterable[RunEnvironment | dict]) -> str:
    """The answer's parenthesis: where its numbers came from, true for every suite in it."""
    envs = [RunEnvironment.of(e) for e in environments]
    policies = {e.page_cache for e in envs} - {None}
    if not policies:
        return ""
    buffered = sorted({s for e in envs for s, (_, b) in suite_policies(e).items() if b})
    if policies == {"off"}:
        if not buffered:
            return "page cache off: numbers from the device"
        # the suites' own I/O, a study's protocol or a program's (pgbench, a replay): each
        # says how in the policy lines; "as the study ran" was false of a database's
        own = "its own I/O" if len(buffered) == 1 else "their own I/O"
        return (f"page cache off, but {', '.join(buffered)} buffered ({own}, said below): "
                "⚠ marks numbers served from memory")
    return f"page cache {', '.join(sorted(policies))}: buffered I/O"
