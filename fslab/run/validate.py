"""Inputs checked before a run exists: one line per mistake, naming the flag or plan key, exit 2.

`fslab run` calls `flags()` before it builds the plan and `plan()` after, both before
`store.create_run`, so a mistaken input never leaves an empty run in the store and never
reaches a workload as a Python exception.
"""
from __future__ import annotations

import functools
import os
import re
from contextlib import contextmanager
from pathlib import Path

from pydantic import ValidationError

from fslab.errors import FslabError
from fslab.plan.profiles import PROFILES, parse_size
from fslab.system import proc
from fslab import filesystems, workloads
from fslab.run.schedule import Schedule

CODE = 2   # like a usage error: the command was wrong, nothing ran

# fio options whose value is a size (k/m/g/t suffixes) or a count; a bad one would
# otherwise surface as a ValueError deep in case expansion or as a failed unit per fs
SIZE_OPTIONS = {"size", "filesize", "bs", "blocksize", "io_size", "io_limit", "offset",
                "offset_increment", "number_ios", "fsync_on_close_size"}
COUNT_OPTIONS = {"numjobs", "iodepth", "nrfiles", "rwmixread", "rwmixwrite", "fsync",
                 "fdatasync", "loops", "ramp_time", "runtime", "openfiles"}
_SIZE = re.compile(r"\d+(\.\d+)?\s*([kmgtp](i?b)?|b)?", re.I)
_COUNT = re.compile(r"\d+\s*(s|ms|us|m|h)?", re.I)   # runtime=60s, ramp_time=2


def error(message: str) -> FslabError:
    return FslabError(message, code=CODE)


@contextmanager
def as_input_errors():
    """Errors raised while reading the plan and flags are input mistakes: exit 2."""
    try:
        yield
    except FslabError as e:
        if e.code == 1:
            e.code = CODE
        raise
    except ValidationError as e:   # a flag fed straight into a plan model (e.g. --profile)
        err = e.errors()[0]
        raise error(f"{'.'.join(map(str, err['loc']))}: "
                    f"{err['msg'].removeprefix('Value error, ')}") from None


TARGETS = ("loop", "device", "mountpoint", "guest")


def flags(*, profile: str | None, iterations: int | None, fio: list[str],
          workdir: Path | None, image_size: str | None = None, target: str | None = None) -> None:
    if profile is not None and profile not in PROFILES:
        raise error(f"--profile {profile!r}: choose one of {', '.join(PROFILES)}")
    if iterations is not None and iterations < 1:
        raise error(f"--iterations {iterations}: must be at least 1")
    engine = next((i.partition("=")[2].strip() for i in fio if i.startswith("ioengine=")), None)
    for item in fio:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise error(f"--fio {item!r}: expected KEY=VALUE")
        why = fio_option_problem(key.strip(), value.strip(), engine)
        if why:
            raise error(f"--fio {item}: {why}")
    if workdir is not None:
        _check_workdir(workdir)
    if image_size is not None and (why := _size_problem(image_size)):
        raise error(f"--image-size {image_size}: {why}")
    if target is not None and target not in TARGETS:
        raise error(f"--target {target!r}: choose one of {', '.join(TARGETS)}")


def _size_problem(value: str) -> str | None:
    if value.strip().startswith("-"):
        return _negative(value)
    if not _SIZE.fullmatch(value.strip()):
        return f"{value!r} is not a size (e.g. 512M, 4G)"
    return None if parse_size(value) > 0 else f"{value!r}: must be greater than zero"


def fio_option_problem(key: str, value: str, engine: str | None = None) -> str | None:
    """Why `key=value` cannot be given to fio: an option fio does not know, or a bad value."""
    return _unknown_option(key, engine) or fio_value_problem(key, value)


def _unknown_option(key: str, engine: str | None) -> str | None:
    """fio's own answer (`--cmdhelp`, `--enghelp`): None when fio knows `key`."""
    known, closest = _fio_knows(key)
    if known or (engine and key in _engine_options(engine)):
        return None
    hint = f" (did you mean {closest}?)" if closest else ""
    return f"fio has no option {key!r}{hint}"


@functools.lru_cache(maxsize=None)
def _fio_option_names() -> frozenset[str]:
    """Every option name fio lists (`--cmdhelp=all`), asked once: a plan checks many
    options and each fio start costs tens of ms. Aliases are not listed; those are
    asked one by one."""
    try:
        r = proc.run(["fio", "--cmdhelp=all"], timeout=20, check=False)
    except Exception:   # no fio here: every key is asked alone (and said known)
        return frozenset()
    return frozenset(m.group(1) for m in re.finditer(r"^\s*([A-Za-z0-9_]+)\s*: ", r.stdout or "", re.M))


@functools.lru_cache(maxsize=None)
def _fio_knows(key: str) -> tuple[bool, str | None]:
    if key in _fio_option_names():
        return True, None
    try:
        r = proc.run(["fio", f"--cmdhelp={key}"], timeout=20, check=False)
    except Exception:   # no fio here: `fslab doctor` says so; the run itself will fail clearly
        return True, None
    out = (r.stdout or "") + (r.stderr or "")
    if "No such command" not in out:
        return True, None
    # fio follows "No such command" with "- showing closest match" and that option's help
    m = re.search(r"^\s*([A-Za-z0-9_]+): ", out.split("closest match", 1)[-1], re.M)
    return False, (m.group(1) if "closest match" in out and m else None)


@functools.lru_cache(maxsize=None)
def _engine_options(engine: str) -> frozenset[str]:
    try:
        r = proc.run(["fio", f"--enghelp={engine}"], timeout=20, check=False)
    except Exception:
        return frozenset()
    return frozenset(m.group(1) for m in re.finditer(r"^([A-Za-z0-9_]+)\s+:", r.stdout or "", re.M))


def fio_value_problem(key: str, value: str) -> str | None:
    """Why `key=value` cannot be a fio option value, or None (only keys fslab reads itself
    or that are plain sizes/counts are judged: fio checks the rest when it runs)."""
    if key in SIZE_OPTIONS:
        if value.startswith("-"):
            return _negative(value)
        if any(c in value for c in "%:,-"):
            return None   # percentages, ranges (4k-64k), per-direction bs (4k,64k): fio judges
        if not _SIZE.fullmatch(value):
            return f"{value!r} is not a size (e.g. 4k, 64M, 1G)"
        if parse_size(value) <= 0 and key != "offset":
            return f"{value!r}: must be greater than zero"
    elif key in COUNT_OPTIONS:
        if value.startswith("-"):
            return _negative(value)
        if not _COUNT.fullmatch(value):
            return f"{value!r} is not a whole number"
        if key == "numjobs" and int(re.match(r"\d+", value).group()) < 1:
            return f"{value!r}: must be at least 1"
    return None


def _negative(value: str) -> str:
    return f"{value!r}: must not be negative"


# filesystems that hold no regular files to put loop images in (tmpfs and ramfs do: images
# in RAM, which the report then says, as bench/noise uses to take the disk out)
PSEUDO_FILESYSTEMS = frozenset({"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2",
                                "debugfs", "tracefs", "securityfs", "pstore", "bpf",
                                "configfs", "fusectl", "mqueue", "hugetlbfs", "efivarfs",
                                "binfmt_misc", "autofs", "rpc_pipefs", "nsfs"})


def fstype_of(path: Path) -> str:
    """The type of the filesystem holding `path` ('' when findmnt cannot tell)."""
    r = proc.run(["findmnt", "-n", "-o", "FSTYPE", "--target", str(path)], check=False, timeout=30)
    return r.stdout.strip().splitlines()[-1] if r.ok and r.stdout.strip() else ""


def _check_workdir(workdir: Path) -> None:
    p = Path(workdir)
    if p.exists() and not p.is_dir():
        raise error(f"--workdir {p}: not a directory")
    probe = p if p.exists() else p.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise error(f"--workdir {p}: not a writable directory")
    fstype = fstype_of(probe)
    if fstype in PSEUDO_FILESYSTEMS:
        raise error(f"--workdir {p}: {fstype}, a kernel pseudo-filesystem, cannot hold loop "
                    "images")
    try:   # what the run does first: create a file there
        import tempfile
        with tempfile.NamedTemporaryFile(dir=probe, prefix=".fslab-probe-"):
            pass
    except OSError as e:
        raise error(f"--workdir {p}: cannot create files there ({e.strerror})") from None


def plan(the_plan):
    """Filesystems, suites and every suite's cases at the plan's profile, checked before
    the run row exists; returns the plan expanded (fslab/run/schedule.py), which the run
    and the dry run then use."""
    known_fs = filesystems.names()
    for f in the_plan.filesystem:
        if f.name not in known_fs:
            raise error(f"{_at(the_plan, 'filesystem', 'name', f.name)}: filesystem {f.name!r} is "
                        f"unknown; known: {', '.join(known_fs)}")
    for f in the_plan.filesystem:
        if (f.properties or f.pool_properties) and not filesystems.get(f.name).takes_properties:
            key = "properties" if f.properties else "pool_properties"
            raise error(f"{_at(the_plan, 'filesystem', key)}: filesystem {f.label}: {f.name} "
                        "takes no properties (-p/-P, properties, pool_properties are ZFS's); "
                        "use its mkfs or mount options")
    for f in the_plan.filesystem:
        if f.image_size is not None and (why := _size_problem(str(f.image_size))):
            raise error(f"{_at(the_plan, 'filesystem', 'image_size', f.image_size)}: "
                        f"filesystem {f.label} image_size: {why}")
    for f in the_plan.filesystem:
        if f.throttle and (the_plan.decide is None or any(s.kind != "fio" for s in the_plan.suite)):
            raise error(f"{_at(the_plan, 'filesystem', 'throttle')}: filesystem {f.label}: throttle "
                        "is a benchmark aid of fslab decide's candidates on fio workloads "
                        "(a planted slowdown, bench/decide), not a configuration to run")
    known_suites = workloads.names()
    for s in the_plan.suite:
        if s.kind not in known_suites:
            raise error(f"{_at(the_plan, 'suite', 'kind', s.kind)}: suite {s.kind!r} is unknown; "
                        f"known: {', '.join(known_suites)}")
        _check_fio_tables(s.at_profile(the_plan.profile.name), the_plan)
    with as_input_errors():   # every suite's cases, expanded once
        schedule = Schedule.of(the_plan)
    _something_runs(schedule)
    return schedule


def _something_runs(schedule) -> None:
    """A plan whose every case is refused everywhere (a job file naming a device, an engine
    that addresses no files) is a mistake, said in one line: not a run of 0 units."""
    if not schedule.pairs and schedule.notes:
        raise error("; ".join(schedule.notes) + "; nothing left to run")


def _at(the_plan, table: str, key: str, value=None) -> str:
    """`plan.toml:LINE` of `key` (holding `value`) under `[table...]`; the source alone when
    its text does not show it plainly (the plan came from flags, or the key is inline)."""
    path = the_plan.source_path or "<plan>"
    lines = (the_plan.source_text or "").splitlines()
    in_table = False
    for i, line in enumerate(lines, 1):
        head = re.match(r"\s*\[\[?\s*([^\]]+?)\s*\]\]?", line)
        if head:
            in_table = head.group(1) == table or head.group(1).startswith(table + ".")
            continue
        m = re.match(rf"\s*\"?{re.escape(key)}\"?\s*=(.*)", line)
        if in_table and m and (value is None or str(value) in m.group(1)):
            return f"{path}:{i}"
    return str(path)


def _check_fio_tables(spec, the_plan) -> None:
    """fio option values of [suite.fio], [suite.jobs.NAME] and [suite.sweep] (lists)."""
    o = spec.options
    tables = [("suite.fio", o.get("fio"))]
    tables += [(f"suite.jobs.{n}", d) for n, d in (o.get("jobs") or {}).items()]
    common_engine = (o.get("fio") or {}).get("ioengine") if isinstance(o.get("fio"), dict) else None
    for table, d in tables:
        engine = (d or {}).get("ioengine", common_engine) if isinstance(d, dict) else None
        for k, v in (d or {}).items() if isinstance(d, dict) else ():
            why = fio_option_problem(k, str(v), engine)
            if why:
                raise error(f"{_at(the_plan, table, k)}: [{table}] {k}: {why}")
    for k, vals in (o.get("sweep") or {}).items() if isinstance(o.get("sweep"), dict) else ():
        for v in vals if isinstance(vals, list) else [vals]:
            why = fio_option_problem(k, str(v), common_engine)
            if why:
                raise error(f"{_at(the_plan, 'suite.sweep', k)}: [suite.sweep] {k}: {why}")
