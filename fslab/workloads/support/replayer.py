"""A replay file's operations issued on a directory (docs/replay.md).

One Python thread per captured thread, each issuing its own operations in their order;
`spawn T` starts thread T, `wait T` waits for its end, so a child never runs before its
parent forked it and a parent never goes on before the child it waited for. Handles are
one table shared by all threads (an inherited fd is one open file). Each call is timed
alone (perf_counter_ns around the system call); the GIL is released in every one of
them, so threads overlap in the kernel as they did when captured. Data written is a
seeded random buffer (never the captured bytes, which were not kept); reads land in a
reused buffer. bench/replay measures what Python adds per operation.
"""
from __future__ import annotations

import ctypes
import errno as errnos
import mmap
import os
import random
import threading
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path

from fslab.capture.format import InitEntry, Op, Replay

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_SYS_GETDENTS64 = 217            # x86_64
_libc.fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong)
_libc.sync_file_range.argtypes = (ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong,
                                  ctypes.c_uint)
_libc.syncfs.argtypes = (ctypes.c_int,)
_SFR_WRITE = 2                   # SYNC_FILE_RANGE_WRITE: flags are not kept by the capture


@dataclass
class Difference:
    """One operation whose outcome differs from the capture's."""
    index: int
    op: Op
    got: str | None              # the errno it failed with here (None: it succeeded)

    def line(self) -> str:
        want = f"failed with {self.op.errno}" if self.op.errno else "succeeded"
        got = f"failed with {self.got}" if self.got else "succeeded"
        return f"op {self.index + 1} ({self.op.kind} {_short(self.op)}): {got} here, {want} when captured"


@dataclass
class Outcome:
    elapsed_s: float
    latencies_ns: dict[str, array] = field(default_factory=dict)   # kind -> per-call ns
    issued: dict[str, int] = field(default_factory=dict)
    bytes_read: int = 0
    bytes_written: int = 0
    differences: list[Difference] = field(default_factory=list)
    max_lag_s: float = 0.0       # --pace: the most an operation was issued after its time

    @property
    def operations(self) -> int:
        return sum(self.issued.values())


def _short(op: Op) -> str:
    return " ".join(str(a) for a in op.args)[:60]


def make_initial_state(root: Path, init: list[InitEntry], seed: int, zeros: float = 0.0) -> None:
    """The files the command found, with their sizes (random content), dirs and symlinks."""
    data = Payload(seed, 1 << 20, zeros)
    for e in init:
        p = root / e.path
        if e.kind == "dir":
            p.mkdir(parents=True, exist_ok=True)
        elif e.kind == "symlink":
            p.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(e.target, p)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            with open(p, "wb") as f:
                left = e.size
                while left > 0:
                    n = min(left, len(data.buf))
                    f.write(data.view[:n])
                    left -= n


class Payload:
    """A page-aligned seeded random buffer (aligned: O_DIRECT writes accept it); with
    `zeros` > 0, that share of every 4 KiB block is zeros (compressible by about 1/(1-zeros))."""

    def __init__(self, seed: int, size: int, zeros: float = 0.0):
        size = max(4096, -(-size // 4096) * 4096)
        self.buf = mmap.mmap(-1, size)
        self.buf.write(random.Random(seed).randbytes(size))
        keep = 4096 - int(4096 * zeros)
        if keep < 4096:
            for block in range(0, size, 4096):
                self.buf[block + keep:block + 4096] = bytes(4096 - keep)
        self.view = memoryview(self.buf)


def _flags(text: str) -> int:
    return sum(getattr(os, f, 0) for f in text.split("|"))


class Replayer:
    def __init__(self, replay: Replay, root: Path, seed: int, pace: bool = False,
                 zeros: float = 0.0):
        self.replay, self.root, self.pace = replay, root, pace
        biggest = max((o.size for o in replay.ops), default=0)
        self.data = Payload(seed, min(max(biggest, 4096), 64 << 20), zeros)
        # reads land here, never in the data written (threads share it: contents unused)
        self.sink = memoryview(mmap.mmap(-1, len(self.data.buf)))
        self.handles: dict[int, int] = {}
        self.opened = threading.Condition()
        self.by_thread: dict[int, list[tuple[int, Op]]] = {}
        for i, o in enumerate(replay.ops):
            self.by_thread.setdefault(o.thread, []).append((i, o))
        self.done = {t: threading.Event() for t in self.by_thread}
        self.after = cross_thread_order(replay.ops)
        self.issued_ev = {j: threading.Event() for j in set(self.after.values())}
        self.workers: dict[int, threading.Thread] = {}
        self.lock = threading.Lock()
        self.out = Outcome(0.0)
        self.start_ns = 0

    # -- running ----------------------------------------------------------------------

    def run(self) -> Outcome:
        self.rootfd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            first = self.replay.ops[0].thread if self.replay.ops else None
            # a thread nobody spawned (the capture began inside it) starts at once
            spawned = {o.args[0] for o in self.replay.ops if o.kind == "spawn"}
            self.start_ns = time.perf_counter_ns()
            for t in self.by_thread:
                if t == first or t not in spawned:
                    self._start(t)
            for t in list(self.by_thread):
                self.done[t].wait()
            self.out.elapsed_s = (time.perf_counter_ns() - self.start_ns) / 1e9
        finally:
            for fd in self.handles.values():
                try:
                    os.close(fd)
                except OSError:
                    pass
            os.close(self.rootfd)
        return self.out

    def _start(self, t: int) -> None:
        with self.lock:
            if t in self.workers or t not in self.by_thread:
                return
            w = threading.Thread(target=self._thread, args=(t,), daemon=True,
                                 name=f"replay-{t}")
            self.workers[t] = w
        w.start()

    def _thread(self, t: int) -> None:
        lat: dict[str, array] = {}
        issued: dict[str, int] = {}
        read = written = 0
        diffs = []
        lag = 0.0
        try:
            for i, op in self.by_thread[t]:
                if op.kind == "spawn":
                    self._start(op.args[0])
                    continue
                if op.kind == "wait":
                    if op.args[0] in self.done:
                        self._start(op.args[0])
                        self.done[op.args[0]].wait()
                    continue
                if i in self.after:   # another thread's earlier call on the same file first
                    self.issued_ev[self.after[i]].wait()
                if self.pace:
                    due = self.start_ns + int(op.t * 1e9)
                    now = time.perf_counter_ns()
                    if due > now:
                        time.sleep((due - now) / 1e9)
                    else:
                        lag = max(lag, (now - due) / 1e9)
                t0 = time.perf_counter_ns()
                try:
                    moved = self._issue(op)
                    got = None
                except OSError as e:
                    t1 = time.perf_counter_ns()
                    moved, got = 0, errnos.errorcode.get(e.errno, str(e.errno))
                else:
                    t1 = time.perf_counter_ns()
                (lat.get(op.kind) or lat.setdefault(op.kind, array("q"))).append(t1 - t0)
                issued[op.kind] = issued.get(op.kind, 0) + 1
                if op.kind == "read":
                    read += moved
                elif op.kind == "write":
                    written += moved
                elif op.kind == "copy":
                    read += moved
                    written += moved
                if got != op.errno:
                    diffs.append(Difference(i, op, got))
                if i in self.issued_ev:
                    self.issued_ev[i].set()
        finally:
            for i, _ in self.by_thread[t]:   # never leave a thread waiting on a dead one
                if i in self.issued_ev:
                    self.issued_ev[i].set()
            with self.lock:
                o = self.out
                for k, a in lat.items():
                    o.latencies_ns.setdefault(k, array("q")).extend(a)
                for k, n in issued.items():
                    o.issued[k] = o.issued.get(k, 0) + n
                o.bytes_read += read
                o.bytes_written += written
                o.differences.extend(diffs)
                o.max_lag_s = max(o.max_lag_s, lag)
            self.done[t].set()

    # -- one operation ------------------------------------------------------------------

    def _fd(self, h: int) -> int:
        fd = self.handles.get(h)
        if fd is None:
            raise OSError(errnos.EBADF, "handle not open")
        return fd

    def _issue(self, op: Op) -> int:
        """Issue one operation; the bytes it moved (data operations), else 0."""
        k, a, root = op.kind, op.args, self.rootfd
        if k == "write":
            fd, off, n = self._fd(a[0]), a[1], a[2]
            done = 0
            while done < n:   # a write bigger than the buffer goes in buffer-sized pieces
                chunk = self.data.view[:min(n - done, len(self.data.buf))]
                w = os.write(fd, chunk) if off is None else os.pwrite(fd, chunk, off + done)
                if w == 0:
                    break
                done += w
            return done
        if k == "read":
            fd, off, n = self._fd(a[0]), a[1], a[2]
            done = 0
            while done < n:
                chunk = self.sink[:min(n - done, len(self.sink))]
                r = os.readv(fd, [chunk]) if off is None else os.preadv(fd, [chunk], off + done)
                if r == 0:
                    break
                done += r
            if n == 0:   # a read that met the end when captured: the same call, 4 KiB asked
                off_arg = [self.sink[:4096]]
                done = os.readv(fd, off_arg) if off is None else os.preadv(fd, off_arg, off)
            return done
        if k == "open":
            fd = os.open(a[1], _flags(a[2]), a[3], dir_fd=root)
            with self.opened:
                old = self.handles.pop(a[0], None)
                self.handles[a[0]] = fd
            if old is not None:
                os.close(old)
            return 0
        if k == "close":
            with self.opened:
                fd = self.handles.pop(a[0], None)
            if fd is None:
                raise OSError(errnos.EBADF, "handle not open")
            os.close(fd)
            return 0
        if k == "seek":
            os.lseek(self._fd(a[0]), a[1], getattr(os, a[2], os.SEEK_SET))
        elif k == "fsync":
            os.fsync(self._fd(a[0]))
        elif k == "fdatasync":
            os.fdatasync(self._fd(a[0]))
        elif k == "stat":
            os.stat(a[0], dir_fd=root)
        elif k == "lstat":
            os.stat(a[0], dir_fd=root, follow_symlinks=False)
        elif k == "fstat":
            os.fstat(self._fd(a[0]))
        elif k == "access":
            if not os.access(a[0], os.F_OK, dir_fd=root):
                raise OSError(errnos.ENOENT, "no such file")
        elif k == "getdents":
            n = _libc.syscall(_SYS_GETDENTS64, self._fd(a[0]), self._dents_buf(), 32768)
            if n < 0:
                raise OSError(ctypes.get_errno(), "getdents64")
        elif k == "mkdir":
            os.mkdir(a[0], a[1] or 0o777, dir_fd=root)
        elif k == "rmdir":
            os.rmdir(a[0], dir_fd=root)
        elif k == "unlink":
            os.unlink(a[0], dir_fd=root)
        elif k == "rename":
            os.rename(a[0], a[1], src_dir_fd=root, dst_dir_fd=root)
        elif k == "link":
            os.link(a[0], a[1], src_dir_fd=root, dst_dir_fd=root)
        elif k == "symlink":
            os.symlink(a[0], a[1], dir_fd=root)
        elif k == "ftruncate":
            os.ftruncate(self._fd(a[0]), a[1])
        elif k == "truncate":
            os.truncate(self.root / a[0], a[1])
        elif k == "fallocate":
            if _libc.fallocate(self._fd(a[0]), a[1], a[2], a[3]) != 0:
                raise OSError(ctypes.get_errno(), "fallocate")
        elif k == "syncfs":   # sync(2) or syncfs(2) when captured: this filesystem's flush
            if _libc.syncfs(root) != 0:
                raise OSError(ctypes.get_errno(), "syncfs")
        elif k == "sync_file_range":
            if _libc.sync_file_range(self._fd(a[0]), a[1], a[2], _SFR_WRITE) != 0:
                raise OSError(ctypes.get_errno(), "sync_file_range")
        elif k == "copy":
            src, dst = self._fd(a[0]), self._fd(a[2])
            return os.copy_file_range(src, dst, a[4], a[1], a[3]) if a[4] else 0
        return 0

    _dents = threading.local()

    def _dents_buf(self):
        b = getattr(self._dents, "buf", None)
        if b is None:
            b = self._dents.buf = ctypes.create_string_buffer(32768)
        return b


def cross_thread_order(ops: list[Op]) -> dict[int, int]:
    """op index -> the index of the op it must follow: the latest earlier op of another
    thread on the same file (its path, or the path its handle was opened at) or on a
    directory above it that the replay makes, removes or renames. What one thread created,
    another removes after it, as captured; calls on unrelated files keep their concurrency
    (threads synchronise in memory, which strace does not see; files are what they share
    here)."""
    from fslab.capture.format import SIGNATURES
    made = {a for o in ops if o.kind in ("mkdir", "rmdir", "rename") for a in o.args}
    handle_path: dict[int, str] = {}
    last: dict[str, tuple[int, int]] = {}     # key -> (op index, thread)
    after: dict[int, int] = {}
    for i, o in enumerate(ops):
        keys = []
        for kind, a in zip(SIGNATURES[o.kind], o.args):
            if kind == "p":
                keys.append(a)
                parts = a.split("/")
                keys += [d for d in ("/".join(parts[:n]) for n in range(1, len(parts))) if d in made]
            elif kind == "h":
                keys.append(f"h:{a}")
                if a in handle_path:
                    keys.append(handle_path[a])
        if o.kind == "open":
            handle_path[o.args[0]] = o.args[1]
        dep = max((last[k][0] for k in keys if k in last and last[k][1] != o.thread), default=None)
        if dep is not None:
            after[i] = dep
        for k in keys:
            last[k] = (i, o.thread)
    return after


def snapshot_paths(root: Path) -> dict[str, tuple[str, int]]:
    """relative path -> (kind, size) of everything under root."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            full = Path(dirpath) / name
            rel = str(full.relative_to(root))
            if full.is_symlink():
                out[rel] = ("symlink", 0)
            elif full.is_dir():
                out[rel] = ("dir", 0)
            else:
                out[rel] = ("file", full.lstat().st_size)
    return out


def outcome_json(out: Outcome) -> bytes:
    import orjson
    return orjson.dumps({
        "elapsed_s": out.elapsed_s, "issued": out.issued, "bytes_read": out.bytes_read,
        "bytes_written": out.bytes_written, "max_lag_s": out.max_lag_s,
        "latencies_ns": {k: a.tolist() for k, a in out.latencies_ns.items()},
        "differences": [{"index": d.index, "got": d.got} for d in out.differences]})


def outcome_from_json(data: bytes, replay: Replay) -> Outcome:
    import orjson
    d = orjson.loads(data)
    return Outcome(d["elapsed_s"], {k: array("q", v) for k, v in d["latencies_ns"].items()},
                   d["issued"], d["bytes_read"], d["bytes_written"],
                   [Difference(x["index"], replay.ops[x["index"]], x["got"])
                    for x in sorted(d["differences"], key=lambda x: x["index"])],
                   d["max_lag_s"])


def main(argv: list[str]) -> None:
    """python -m fslab.workloads.support.replayer REPLAY ROOT SEED PACE(0|1) ZEROS OUT: the
    replay in a process of its own, so that the unit's deadline can kill it whole."""
    from fslab.capture.format import load
    replay_file, root, seed, pace, zeros, out = argv
    result = Replayer(load(Path(replay_file)), Path(root), int(seed), pace == "1",
                      float(zeros)).run()
    Path(out).write_bytes(outcome_json(result))


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
