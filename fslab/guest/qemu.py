"""Launching one qemu guest, streaming its serial console, and never letting it outlive us.

The guest is noted in fslab's state file (kind "guest": qemu pid + its scratch
files) the moment qemu starts, so `fslab cleanup` can stop it after a crash;
`Guest.stop()` (called from `finally`) stops it on success, errors and Ctrl-C.
qemu runs in its own session so a terminal's Ctrl-C reaches fslab, which then
stops the guest in order, instead of killing qemu behind fslab's back.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Callable

from fslab.system import state
from fslab.errors import FslabError, TeardownFailed
from fslab.system.proc import which
from fslab.system.teardown import stop_pid

QEMU = "qemu-system-x86_64"
JOB_TAG = "fslabjob"     # 9p mount tag the guest init looks for


def qemu_binary() -> str:
    path = which(QEMU)
    if not path:
        raise FslabError(f"{QEMU} not found (apt-get install qemu-system-x86)")
    return path


def supports_direct_io(path: Path) -> bool:
    """cache=none needs O_DIRECT on the file holding the disk (tmpfs says no)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError:
        return False
    os.close(fd)
    return True


class Guest:
    """One qemu process. `start()`, then `wait()`; `stop()` is idempotent."""

    def __init__(self, kernel: Path, initrd: Path, accel: str, *, append: str = "",
                 rootfs: Path | None = None, data_disk: Path | None = None,
                 job_dir: Path | None = None, memory_mib: int = 2048, cpus: int = 2,
                 console_log: Path | None = None, on_line: Callable[[str], None] | None = None,
                 scratch: list[Path] | None = None, cpu: str | None = None):
        self.cpu = cpu                   # None: "host" under KVM, "max" under TCG
        self.kernel, self.initrd, self.accel = kernel, initrd, accel
        self.append, self.rootfs, self.data_disk, self.job_dir = append, rootfs, data_disk, job_dir
        self.memory_mib, self.cpus = memory_mib, cpus
        self.console_log, self.on_line = console_log, on_line
        self.scratch = scratch or []     # files/dirs removed with the guest
        self.ident = f"fslab-guest-{uuid.uuid4().hex[:8]}"
        self.proc: subprocess.Popen | None = None
        self._reader: threading.Thread | None = None
        self.lines: list[str] = []       # the last console lines, for error messages

    def argv(self) -> list[str]:
        a = [qemu_binary(), "-name", self.ident, "-nodefaults", "-no-user-config",
             "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot",
             "-m", str(self.memory_mib), "-smp", str(self.cpus), "-rtc", "base=utc",
             "-nic", "none"]
        if self.accel == "kvm":
            a += ["-accel", "kvm", "-cpu", self.cpu or "host"]
        else:
            a += ["-accel", "tcg,thread=multi", "-cpu", self.cpu or "max"]
        a += ["-kernel", str(self.kernel), "-initrd", str(self.initrd),
              "-append", f"console=ttyS0 panic=1 quiet loglevel=3 {self.append}".strip()]
        if self.rootfs:
            # snapshot=on: the guest's writes to / go to a throwaway overlay, the cache stays pristine
            a += ["-drive", f"file={self.rootfs},if=virtio,format=raw,snapshot=on"]
        if self.data_disk:
            cache = "none" if supports_direct_io(self.data_disk) else "writeback"
            a += ["-drive", f"file={self.data_disk},if=virtio,format=raw,cache={cache},"
                  "discard=unmap,detect-zeroes=unmap"]
        if self.job_dir:
            a += ["-virtfs", f"local,path={self.job_dir},mount_tag={JOB_TAG},"
                  "security_model=none,id=fslabjob"]
        return a

    def start(self) -> "Guest":
        log = open(self.console_log, "a", buffering=1) if self.console_log else None
        self.started = time.monotonic()
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True, preexec_fn=_die_with_parent)
        state.note("guest", self.ident, qemu_pid=self.proc.pid,
                   scratch=[str(p) for p in self.scratch])
        self._reader = threading.Thread(target=self._pump, args=(log,), daemon=True)
        self._reader.start()
        return self

    def _pump(self, log) -> None:
        assert self.proc and self.proc.stdout
        for raw in iter(self.proc.stdout.readline, b""):
            line = raw.decode(errors="replace").rstrip("\r\n")
            # the serial console interleaves ANSI resets; keep text readable
            line = line.replace("\x1b[0m", "").replace("\x1bc", "")
            self.lines = (self.lines + [line])[-200:]
            if log:   # seconds since qemu started: shows where boot and run time go
                log.write(f"[{time.monotonic() - self.started:8.2f}] {line}\n")
            if self.on_line:
                try:
                    self.on_line(line)
                except Exception:
                    pass
        if log:
            log.close()

    def wait(self, timeout: float | None = None) -> int | None:
        """qemu's exit code, or None if it is still running after `timeout` seconds."""
        assert self.proc
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        if self._reader:
            self._reader.join(timeout=5)
        return rc

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """Kill qemu (if running) and remove its scratch files. Safe to call twice."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)   # the guest holds nothing worth saving
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=30)
        if self._reader:
            self._reader.join(timeout=5)
        _remove(self.scratch)
        state.forget("guest", self.ident)


def _die_with_parent() -> None:
    """In the child: SIGKILL qemu if fslab dies, even by kill -9 (prctl PR_SET_PDEATHSIG)."""
    import ctypes
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass   # not Linux: `fslab cleanup` still finds the guest


def _remove(paths: list) -> None:
    for p in map(Path, paths):
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


def _is_our_qemu(pid: int, ident: str) -> bool:
    """True while `pid` is the qemu we started (a reused pid or a zombie is not)."""
    try:
        return bool(pid) and ident.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@state.handler("guest")
def _cleanup_guest(e: dict) -> None:
    """`fslab cleanup`: stop the qemu we started (only if that pid is still our guest)."""
    pid = int(e.get("qemu_pid") or 0)
    if _is_our_qemu(pid, e["id"]):
        stop_pid(pid, timeout=5)
        deadline = time.time() + 10
        while _is_our_qemu(pid, e["id"]) and time.time() < deadline:
            time.sleep(0.1)
        if _is_our_qemu(pid, e["id"]):
            raise TeardownFailed(f"qemu pid {pid} did not stop")
    _remove(e.get("scratch", []))
