"""The options probe: does this kernel and these tools accept a variant's options?

Before a run row exists, each filesystem variant with options of its own is made once
on a small scratch loop image (never the user's device): mkfs with its mkfs options and
properties, mount with its mount options, the options read back (/proc/self/mountinfo,
`zfs get`, `zpool get`), unmount, detach, each probe within a time limit and cleaned up
on any exit. A refusal is one line naming the variant and the cause, with the kernel's
own line when the mount failed (read from /dev/kmsg around the mount). An option the
kernel accepted but lists otherwise than asked (btrfs compress=zstd is compress=zstd:3),
or does not list at all (a default it never shows, or one it ignores), is a note: the
run goes on, and the notes and the options in effect are kept with the run.

`probe(driver, spec)` is the one entry point; `fslab run` calls `probe_plan` from the
local executor's check, and `fslab decide` probes each candidate with `probe`.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from fslab.errors import FslabError, StepFailed
from fslab.plan import FilesystemSpec, Plan
from fslab.filesystems.base import Instance, read_mountinfo
from fslab.run.schedule import Schedule
from fslab.run.session import scratch_dir, end_driver_sessions
from fslab.system import state
from fslab.targets.loop import LoopTarget
from fslab.system.proc import run, _procs, kill_family
from fslab.plan.profiles import parse_size
from fslab import filesystems

SIZE_BYTES = 1 << 30   # sparse; when the plan cannot tell the size its units will use
TIME_LIMIT_S = 120         # per variant: mkfs + mount + read back (teardown has its own limits)


@dataclass
class ProbeResult:
    ok: bool
    why: str = ""                                   # one line when refused
    options_in_effect: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # accepted, but read back otherwise
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "why": self.why, "in_effect": self.options_in_effect,
                "notes": self.notes, "seconds": round(self.seconds, 2)}


def has_own_options(spec: FilesystemSpec) -> bool:
    return bool(spec.mkfs_options or spec.mount_options or spec.properties
                or spec.pool_properties)


def probe(driver, spec: FilesystemSpec, *, workdir: Path | None = None,
          size_bytes: int = SIZE_BYTES, time_limit: float = TIME_LIMIT_S) -> ProbeResult:
    """mkfs + mount `spec` on a scratch loop image, read its options back, tear it down."""
    t0 = time.monotonic()
    wd = Path(workdir) if workdir else scratch_dir("fslab-probe-")
    if not workdir:
        state.note("dir", str(wd))
    label = spec.label
    inst = Instance(driver, spec, LoopTarget(wd), wd, "probe-" + re.sub(r"[^\w.-]", "_", label),
                    size_bytes)
    result = ProbeResult(ok=True)
    try:
        with _time_limit(time_limit) as limit:
            try:
                inst.acquire()
                inst.mkfs()
            except StepFailed as e:
                return _refused(result, f"{label}: {_what_mkfs(driver, spec)} "
                                + (_late(time_limit) if limit.expired else f"refused: {_tail(e)}"))
            if limit.expired:
                return _refused(result, f"{label}: mkfs {_late(time_limit)}")
            with KernelLog() as klog:
                try:
                    inst.mount()
                except StepFailed as e:
                    if limit.expired:
                        return _refused(result, f"{label}: mount{_mount_text(spec)} "
                                        + _late(time_limit))
                    said = klog.lines(driver.fstype, inst.devices)
                    cause = "; ".join(said) if said else _tail(e)
                    return _refused(result, f"{label}: mount{_mount_text(spec)} refused: {cause}"
                                    + (" (kernel log)" if said else ""))
            if limit.expired:
                return _refused(result, f"{label}: mount{_mount_text(spec)} {_late(time_limit)}")
            result.options_in_effect, result.notes = read_back(driver, inst)
            if limit.expired:
                return _refused(result, f"{label}: reading its options back {_late(time_limit)}")
    finally:
        result.seconds = time.monotonic() - t0
        try:
            inst.close()
        finally:
            # a losetup stopped by the time limit after it attached, before it said which
            # device: fslab never learnt of that one, so detach whatever holds the images
            _detach_loops_of(wd)
            if not workdir:
                shutil.rmtree(wd, ignore_errors=True)
                state.forget("dir", str(wd))
    return result


def _detach_loops_of(directory: Path) -> None:
    for image in Path(directory).glob("*.img"):
        r = run(["losetup", "--noheadings", "-O", "NAME", "-j", str(image)], check=False, timeout=30)
        for dev in r.stdout.split():
            run(["losetup", "-d", dev], check=False, timeout=30)


def _late(seconds: float) -> str:
    return f"passed the probe's time limit ({seconds:g} s) and was stopped"


def _refused(result: ProbeResult, why: str) -> ProbeResult:
    result.ok, result.why = False, why
    return result


def _tail(e: Exception) -> str:
    """The command's own words: what follows 'failed (exit N): ' in a StepFailed."""
    text = str(e)
    m = re.search(r"failed \(exit \d+\): (.*)$", text, re.S)
    return (m.group(1) if m else text).strip() or text


def _what_mkfs(driver, spec: FilesystemSpec) -> str:
    bits = []
    if spec.mkfs_options:
        bits.append(" ".join(spec.mkfs_options))
    bits += [f"-O {k}={v}" for k, v in spec.properties.items()]
    bits += [f"-o {k}={v}" for k, v in spec.pool_properties.items()]
    tool = driver.mkfs_tool or ("zpool create" if driver.takes_properties else "mkfs")
    return f"{tool} {' '.join(bits)}".strip()


def _mount_text(spec: FilesystemSpec) -> str:
    return f" -o {','.join(spec.mount_options)}" if spec.mount_options else ""


def read_back(driver, inst) -> tuple[dict[str, Any], list[str]]:
    """What is in effect for the asked options, and a note for each read back otherwise."""
    spec, notes = inst.spec, []
    mount = read_mountinfo(str(inst.mountpoint))
    shown = [o for o in (mount.get("mount_options", "") + "," + mount.get("super_options", ""))
             .split(",") if o]
    effect: dict[str, Any] = {"mount_options": mount.get("mount_options", ""),
                              "super_options": mount.get("super_options", "")}
    aliases = {v: o.shown_as(v) for o in driver.catalogue for v in o.values}
    for asked in spec.mount_options:
        want = aliases.get(asked, asked)
        if want in shown:
            continue
        key, _, value = want.partition("=")
        same_key = [o for o in shown if o.partition("=")[0] == key]
        if value and any(same_value(value, o.partition("=")[2]) for o in same_key):
            continue   # allocsize=1m is listed as allocsize=1024k
        notes.append(f"-o {asked}: the kernel shows {', '.join(same_key)}" if same_key else
                     f"-o {asked}: not listed in /proc/self/mountinfo (a default the kernel "
                     "does not list, or ignored)")
    if spec.properties or spec.pool_properties:
        info = driver.effective_options(inst)
        props = {k: (v.get("value") if isinstance(v, dict) else v)
                 for k, v in (info.get("properties") or {}).items()}
        pool = info.get("pool_properties") or {}
        effect["properties"] = {k: props.get(k) for k in spec.properties}
        effect["pool_properties"] = {k: pool.get(k) for k in spec.pool_properties}
        for flag, asked, got in (("-p", spec.properties, props), ("-P", spec.pool_properties, pool)):
            for k, v in asked.items():
                if k not in got:
                    notes.append(f"{flag} {k}={v}: not listed by "
                                 f"{'zfs get' if flag == '-p' else 'zpool get'}")
                elif not same_value(v, str(got[k])):
                    notes.append(f"{flag} {k}={v}: reads back as {got[k]}")
    return effect, notes


def same_value(asked: str, got: str) -> bool:
    """8k, 8K and 8192 are one recordsize; on/ON one switch."""
    a, g = asked.strip().lower(), got.strip().lower()
    if a == g:
        return True
    try:
        return parse_size(a) == parse_size(g)
    except (ValueError, KeyError, TypeError):
        return False


class KernelLog:
    """The kernel log lines written while the block runs (/dev/kmsg from its end)."""

    def __enter__(self) -> "KernelLog":
        try:
            self.fd: int | None = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
            os.lseek(self.fd, 0, os.SEEK_END)
        except OSError:
            self.fd = None   # no kernel log here: the tool's own message stands alone
        self.read: list[str] = []
        return self

    def __exit__(self, *exc) -> None:
        self._drain()
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _drain(self) -> None:
        while self.fd is not None:
            try:
                record = os.read(self.fd, 8192).decode(errors="replace")
            except BlockingIOError:
                return
            except BrokenPipeError:   # records overwritten meanwhile: keep reading
                continue
            except OSError:
                return
            if not record:
                return
            head, _, message = record.partition(";")
            self.read.append(message.split("\n", 1)[0].strip())

    def lines(self, fstype: str, devices: list[str]) -> list[str]:
        """Lines about this filesystem type or these devices, not about other loop devices
        (another run may be mounting at the same moment)."""
        self._drain()
        ours = {os.path.basename(d) for d in devices}
        out = []
        for line in self.read:
            others = set(re.findall(r"\b(loop\d+)\b", line)) - ours
            if others:
                continue
            if fstype.lower() in line.lower() or any(d in line for d in ours):
                out.append(line)
        return list(dict.fromkeys(out))


class _Limit:
    expired = False


@contextmanager
def _time_limit(seconds: float) -> Iterator[_Limit]:
    """Past `seconds`, the command in flight (and any started after it, checked every
    second) is killed with its process group, so the step fails as a refused one would,
    and `expired` says why. Nothing is raised into Python code (a half-written state file
    would lose a noted loop device). Only the main thread takes SIGALRM: elsewhere each
    command's own time limit is the only one."""
    limit = _Limit()
    if threading.current_thread() is not threading.main_thread():
        yield limit
        return
    me = os.getpid()

    def expired(signum, frame):
        limit.expired = True
        for p in _procs():
            if p.ppid == me:
                kill_family(p.pid)

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        yield limit
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def probe_sizes(plan: Plan, schedule: Schedule | None = None) -> Callable[[FilesystemSpec], int]:
    """The image a probe of a spec uses: the smallest the plan's units will make it on (with
    the plan's --image-size, which its filesystems carry, for a candidate not yet in it).
    Read from the plan's one expansion (`schedule`: a run's session has it), else the plan
    is expanded here, once for every spec asked about."""
    schedule = schedule or Schedule.of(plan)
    given = next((f.image_size for f in plan.filesystem if f.image_size), None)

    def size(spec: FilesystemSpec) -> int:
        if given and not spec.image_size:
            spec = spec.model_copy(update={"image_size": given})
        return schedule.smallest_image(spec) or SIZE_BYTES
    return size


def probe_plan(schedule: Schedule, say: Callable[[str], None]) -> dict[str, dict]:
    """Probe every variant of the plan (expanded once, into the run's `schedule`) that has
    options of its own and can be made here; FslabError (exit 2) when any is refused,
    naming the first and counting the others.
    Returns {label: ProbeResult.as_dict()} for the run's environment."""
    plan = schedule.plan
    size = probe_sizes(plan, schedule)
    results: dict[str, ProbeResult] = {}
    probed: set[str] = set()
    t0 = time.monotonic()
    try:
        for spec in plan.filesystem:
            driver = filesystems.get(spec.name)
            if not has_own_options(spec) or not driver.probe_options or not driver.available().ok:
                continue   # nothing of the user's to refuse, or the scheduler skips it with a note
            probed.add(spec.name)
            results[spec.label] = probe(driver, spec, size_bytes=size(spec))
    finally:
        # the run starts what it needs again; a refused run must leave no daemon behind
        end_driver_sessions(sorted(probed), lambda e: say(f"warning: {e}"))
    refused = [r for r in results.values() if not r.ok]
    if refused:
        more = (f" (also refused: {', '.join(label for label, r in results.items() if not r.ok and r is not refused[0])})"
                if len(refused) > 1 else "")
        raise FslabError(refused[0].why + more, code=2)
    if results:
        say(f"options probed on scratch images: {', '.join(results)} accepted "
            f"({time.monotonic() - t0:.1f} s)")
    for label, r in results.items():
        for note in r.notes:
            say(f"note: {label}: {note}")
    return {label: r.as_dict() for label, r in results.items()}
