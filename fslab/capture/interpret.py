"""strace's calls turned into a replay: paths made relative to the captured directory,
fds turned into handles, processes and threads into replay threads.

What the kernel shares is followed as it is shared: a thread (CLONE_FILES) uses its
parent's fd table, a child process gets a copy (the same handles: an inherited fd is one
open file), a handle is closed in the replay when its last fd is (close, dup2 over it,
exec of an O_CLOEXEC fd). The working directory is followed per process (chdir, fchdir,
inherited at fork) and re-read from every `AT_FDCWD</path>` strace prints.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from fslab.capture.account import Account, Mapped
from fslab.capture.format import InitEntry, Op, Replay
from fslab.capture.strace import Call, fd_of, string

FALLOC_FLAGS = {"FALLOC_FL_KEEP_SIZE": 1, "FALLOC_FL_PUNCH_HOLE": 2,
                "FALLOC_FL_NO_HIDE_STALE": 4, "FALLOC_FL_COLLAPSE_RANGE": 8,
                "FALLOC_FL_ZERO_RANGE": 16, "FALLOC_FL_INSERT_RANGE": 32,
                "FALLOC_FL_UNSHARE_RANGE": 64}
_READS = {"read": None, "readv": None, "pread64": 3, "preadv": 3, "preadv2": 3}
_WRITES = {"write": None, "writev": None, "pwrite64": 3, "pwritev": 3, "pwritev2": 3}
_OPENS = {"open": (None, 0, 1, 2), "creat": (None, 0, None, 1), "openat": (0, 1, 2, 3),
          "openat2": (0, 1, 2, None)}


@dataclass
class _Table:
    fds: dict[int, int] = field(default_factory=dict)   # fd -> handle
    cloexec: set[int] = field(default_factory=set)


@dataclass
class _Proc:
    thread: int
    table: _Table
    cwd: list[str]               # shared by threads (CLONE_FS): a one-item list


class Interpreter:
    def __init__(self, root: str, before: dict[str, InitEntry]):
        self.root = os.path.normpath(root)
        self.before = before             # what the directory held before the command
        self.ops: list[Op] = []
        self.procs: dict[int, _Proc] = {}
        self.children: dict[int, tuple[int, str]] = {}   # child pid -> (parent pid, flags)
        self.refs: dict[int, int] = {}   # handle -> fds referring to it
        self.next_handle = 1
        self.next_thread = 1
        self.t0: float | None = None
        self.account = Account()
        self.touched: set[str] = set()

    # -- where things are -----------------------------------------------------------

    def rel(self, path: str | None) -> str | None:
        """A path relative to the directory, or None when it lies outside."""
        if path is None:
            return None
        p = os.path.normpath(path)
        if p == self.root:
            return "."
        if p.startswith(self.root + "/"):
            return p[len(self.root) + 1:]
        return None

    def resolve(self, proc: _Proc, dirfd: str | None, arg: str) -> str | None:
        s = string(arg)
        if s is None:
            return None
        if s.startswith("/"):
            return self.rel(s)
        base = proc.cwd[0]
        if dirfd is not None:
            fd, shown = fd_of(dirfd)
            if shown is not None:
                base = shown
                if fd is None:
                    proc.cwd[0] = shown   # AT_FDCWD's path: the cwd as the kernel has it
        return self.rel(os.path.join(base, s) if s else base)

    def proc(self, pid: int) -> _Proc:
        if pid in self.procs:
            return self.procs[pid]
        parent, flags = self.children.get(pid, (None, ""))
        pp = self.procs.get(parent) if parent is not None else None
        if pp is None:
            p = _Proc(self.next_thread, _Table(), [self.root])
        else:
            table = pp.table if "CLONE_FILES" in flags else _Table(dict(pp.table.fds),
                                                                  set(pp.table.cloexec))
            if table is not pp.table:
                for h in table.fds.values():
                    self.refs[h] += 1
            p = _Proc(self.next_thread, table,
                      pp.cwd if "CLONE_FS" in flags else [pp.cwd[0]])
        self.next_thread += 1
        self.procs[pid] = p
        return p

    # -- emitting ---------------------------------------------------------------------

    def emit(self, c: Call, proc: _Proc, kind: str, *args, failed: bool = True) -> None:
        for a, k in zip(args, _path_args(kind)):
            if k and a is not None:
                self.touched.add(a)
        self.ops.append(Op(round(c.t - self.t0, 6), proc.thread, kind, args,
                           c.errno if failed else None))

    def handle(self, proc: _Proc, arg: str, kind: str = "metadata", size: int = 0) -> int | None:
        """The handle of an fd argument; None (and the call accounted as left out, of this
        kind and size) for an fd outside the directory or opened before the capture."""
        fd, shown = fd_of(arg)
        h = proc.table.fds.get(fd) if fd is not None else None
        if h is None:
            self.left_out(shown, kind, size)
        return h

    def left_out(self, path: str | None, kind: str, size: int = 0) -> None:
        """A call not replayed: lost ("here") when its path lies in the directory."""
        self.account.add("here" if self.rel(path) is not None else "elsewhere", kind, size)

    def bind(self, proc: _Proc, fd: int, handle: int, cloexec: bool, c: Call) -> None:
        if fd in proc.table.fds:
            self.unref(proc, fd, c)
        proc.table.fds[fd] = handle
        self.refs[handle] = self.refs.get(handle, 0) + 1
        (proc.table.cloexec.add if cloexec else proc.table.cloexec.discard)(fd)

    def unref(self, proc: _Proc, fd: int, c: Call) -> None:
        h = proc.table.fds.pop(fd)
        proc.table.cloexec.discard(fd)
        self.refs[h] -= 1
        if self.refs[h] == 0:
            self.ops.append(Op(round(c.t - self.t0, 6), proc.thread, "close", (h,)))

    # -- the calls --------------------------------------------------------------------

    def feed_all(self, calls: list[Call]) -> None:
        """Every call, in parse_lines' order; times counted from the earliest entry (the
        first call fed may have been entered after another, unfinished one)."""
        if calls and self.t0 is None:
            self.t0 = min(c.t for c in calls)
        for c in calls:
            self.feed(c)

    def feed(self, c: Call) -> None:
        if self.t0 is None:
            self.t0 = c.t
        proc = self.proc(c.pid)
        name, a = c.name, c.args
        fn = getattr(self, f"_{name}", None)
        if fn is not None:
            fn(c, proc, a)
        elif name in _OPENS:
            self._open(c, proc, a, *_OPENS[name])
        elif name in _READS or name in _WRITES:
            self._data(c, proc, a, "read" if name in _READS else "write",
                       {**_READS, **_WRITES}[name])
        elif name in ("stat", "lstat", "access"):
            self._path_op(c, proc, name, None, a[0])
        elif name in ("faccessat", "faccessat2"):
            self._path_op(c, proc, "access", a[0], a[1])
        elif name in ("fsync", "fdatasync", "getdents64", "fstat"):
            h = self.handle(proc, a[0], "sync" if name in ("fsync", "fdatasync") else "metadata")
            if h is not None:
                self.emit(c, proc, "getdents" if name == "getdents64" else name, h)

    def _open(self, c, proc, a, dirfd_i, path_i, flags_i, mode_i):
        flags = "O_WRONLY|O_CREAT|O_TRUNC" if flags_i is None else a[flags_i]
        if c.name == "openat2":   # {flags=..., mode=...}
            flags = next((f[6:] for f in a[2].strip("{}").split(", ") if f.startswith("flags=")),
                         "O_RDONLY")
        mode = 0
        if mode_i is not None and mode_i < len(a):
            mode = _int(a[mode_i])
        shown = c.ret_path
        rel = self.rel(shown) if shown else self.resolve(
            proc, a[dirfd_i] if dirfd_i is not None else None, a[path_i])
        if dirfd_i is not None:
            self.resolve(proc, a[dirfd_i], a[path_i])   # keeps the cwd in step
        if rel is None:
            self.account.add("elsewhere", "metadata")
            return
        flags = "|".join(f for f in flags.split("|") if f.startswith("O_")) or "O_RDONLY"
        h = self.next_handle
        self.next_handle += 1
        self.emit(c, proc, "open", h, rel, flags, mode)
        if not c.errno and c.ret_int is not None and c.ret_int >= 0:
            self.bind(proc, c.ret_int, h, "O_CLOEXEC" in flags, c)

    def _data(self, c, proc, a, kind, off_i):
        size = c.ret_int if not c.errno and c.ret_int is not None else _int(a[2])
        h = self.handle(proc, a[0], kind, 0 if c.errno else size)
        if h is None:
            return
        off = _int(a[off_i]) if off_i is not None and off_i < len(a) else None
        self.emit(c, proc, kind, h, off, size)

    def _path_op(self, c, proc, kind, dirfd, arg):
        rel = self.resolve(proc, dirfd, arg)
        if rel is None:
            self.account.add("elsewhere", "metadata")
        else:
            self.emit(c, proc, kind, rel)

    def _close(self, c, proc, a):
        fd, _ = fd_of(a[0])
        if fd in proc.table.fds:
            if not c.errno:
                self.unref(proc, fd, c)
        else:
            self.left_out(fd_of(a[0])[1], "metadata")

    def _newfstatat(self, c, proc, a):
        if string(a[1]) == "" and "AT_EMPTY_PATH" in a[-1]:
            h = self.handle(proc, a[0])
            if h is not None:
                self.emit(c, proc, "fstat", h)
            return
        kind = "lstat" if "AT_SYMLINK_NOFOLLOW" in a[-1] else "stat"
        self._path_op(c, proc, kind, a[0], a[1])

    def _statx(self, c, proc, a):
        self._newfstatat(c, proc, [a[0], a[1], a[4] if len(a) > 4 else "", a[2]])

    def _lseek(self, c, proc, a):
        h = self.handle(proc, a[0])
        if h is not None:
            self.emit(c, proc, "seek", h, _int(a[1]), a[2])

    def _sync_file_range(self, c, proc, a):
        h = self.handle(proc, a[0], "sync")
        if h is not None:
            self.emit(c, proc, "sync_file_range", h, _int(a[1]), _int(a[2]))

    def _ftruncate(self, c, proc, a):
        h = self.handle(proc, a[0])
        if h is not None:
            self.emit(c, proc, "ftruncate", h, _int(a[1]))

    def _truncate(self, c, proc, a):
        rel = self.resolve(proc, None, a[0])
        if rel is None:
            self.account.add("elsewhere", "metadata")
        else:
            self.emit(c, proc, "truncate", rel, _int(a[1]))

    def _fallocate(self, c, proc, a):
        h = self.handle(proc, a[0])
        if h is not None:
            mode = sum(FALLOC_FLAGS.get(f, 0) for f in a[1].split("|")) if not a[1].isdigit() \
                else int(a[1])
            self.emit(c, proc, "fallocate", h, mode, _int(a[2]), _int(a[3]))

    def _copy_file_range(self, c, proc, a):
        self._copy(c, proc, a[0], a[1], a[2], a[3], a[4])

    def _sendfile(self, c, proc, a):
        self._copy(c, proc, a[1], a[2], a[0], "NULL", a[3])

    _splice = _copy_file_range    # same arguments; one side is always a pipe (outside)

    def _copy(self, c, proc, fd_in, off_in, fd_out, off_out, count):
        """In the kernel a copy; for the filesystem under test, what reaches it: from an
        fd outside the directory into one inside, a write of those bytes (cp -a from
        elsewhere: coreutils 9.1 copies with copy_file_range); the other way, a read."""
        size = c.ret_int if not c.errno and c.ret_int is not None else _int(count)
        moved = 0 if c.errno else size
        hi = self.handle(proc, fd_in, "read", moved)
        ho = self.handle(proc, fd_out, "write", moved)
        if hi is not None and ho is not None:
            self.emit(c, proc, "copy", hi, _offset(off_in), ho, _offset(off_out), size)
        elif ho is not None:
            self.emit(c, proc, "write", ho, _offset(off_out), size)
        elif hi is not None:
            self.emit(c, proc, "read", hi, _offset(off_in), size)

    def _sync(self, c, proc, a):
        """sync(2) flushes every filesystem, the one under test among them: a syncfs there."""
        self.emit(c, proc, "syncfs")

    def _syncfs(self, c, proc, a):
        fd, shown = fd_of(a[0])
        if fd in proc.table.fds or self.rel(shown) is not None:   # a file of this filesystem
            self.emit(c, proc, "syncfs")
        else:
            self.left_out(shown, "sync")

    def _two_paths(self, c, proc, kind, d1, p1, d2, p2):
        r1, r2 = self.resolve(proc, d1, p1), self.resolve(proc, d2, p2)
        if r1 is None or r2 is None:   # one side in the directory: a file came or went
            self.account.add("elsewhere" if r1 is None and r2 is None else "here", "metadata")
        else:
            self.emit(c, proc, kind, r1, r2)

    def _rename(self, c, proc, a):
        self._two_paths(c, proc, "rename", None, a[0], None, a[1])

    def _renameat(self, c, proc, a):
        self._two_paths(c, proc, "rename", a[0], a[1], a[2], a[3])

    _renameat2 = _renameat

    def _link(self, c, proc, a):
        self._two_paths(c, proc, "link", None, a[0], None, a[1])

    def _linkat(self, c, proc, a):
        self._two_paths(c, proc, "link", a[0], a[1], a[2], a[3])

    def _symlink(self, c, proc, a):
        self._symlink_to(c, proc, a[0], None, a[1])

    def _symlinkat(self, c, proc, a):
        self._symlink_to(c, proc, a[0], a[1], a[2])

    def _symlink_to(self, c, proc, target, dirfd, path):
        rel = self.resolve(proc, dirfd, path)
        if rel is None:
            self.account.add("elsewhere", "metadata")
        else:
            self.emit(c, proc, "symlink", string(target) or "", rel)

    def _unlink(self, c, proc, a):
        self._path_op(c, proc, "unlink", None, a[0])

    def _unlinkat(self, c, proc, a):
        self._path_op(c, proc, "rmdir" if "AT_REMOVEDIR" in a[2] else "unlink", a[0], a[1])

    def _rmdir(self, c, proc, a):
        self._path_op(c, proc, "rmdir", None, a[0])

    def _mkdir(self, c, proc, a):
        self._mkdir_at(c, proc, None, a[0], a[1])

    def _mkdirat(self, c, proc, a):
        self._mkdir_at(c, proc, a[0], a[1], a[2])

    def _mkdir_at(self, c, proc, dirfd, path, mode):
        rel = self.resolve(proc, dirfd, path)
        if rel is None:
            self.account.add("elsewhere", "metadata")
        else:
            self.emit(c, proc, "mkdir", rel, _int(mode))

    def _mmap(self, c, proc, a):
        fd, shown = fd_of(a[4]) if len(a) > 4 else (None, None)
        rel = self.rel(shown) if fd is not None and fd >= 0 else None
        if rel is not None and not c.errno:
            m = self.account.mmaps.setdefault(rel, Mapped())
            m.count += 1
            m.bytes = max(m.bytes, _int(a[1]))
            m.writable |= "PROT_WRITE" in a[2] and "MAP_SHARED" in a[3]

    def _dup(self, c, proc, a):
        fd, _ = fd_of(a[0])
        new = c.ret_int
        if c.errno or new is None or new == fd:
            return
        if fd in proc.table.fds:
            self.bind(proc, new, proc.table.fds[fd], "O_CLOEXEC" in "".join(a), c)
        elif new in proc.table.fds:   # an fd from outside put over one of ours: ours closes
            self.unref(proc, new, c)

    _dup2 = _dup3 = _dup

    def _fcntl(self, c, proc, a):
        if len(a) > 1 and a[1].startswith("F_DUPFD"):
            self._dup(c, proc, [a[0], "O_CLOEXEC" if "CLOEXEC" in a[1] else ""])

    def _chdir(self, c, proc, a):
        s = string(a[0])
        if not c.errno and s is not None:
            proc.cwd[0] = os.path.normpath(os.path.join(proc.cwd[0], s))

    def _fchdir(self, c, proc, a):
        _, shown = fd_of(a[0])
        if not c.errno and shown:
            proc.cwd[0] = shown

    def _execve(self, c, proc, a):
        if not c.errno:
            for fd in sorted(proc.table.cloexec):
                if fd in proc.table.fds:
                    self.unref(proc, fd, c)

    def _clone(self, c, proc, a):
        child = c.ret_int
        if c.errno or not child or child < 0:
            return
        flags = next((x for x in a if "CLONE_" in x), "")
        self.children[child] = (c.pid, flags)
        self.emit(c, proc, "spawn", self.proc(child).thread)

    _clone3 = _fork = _vfork = _clone

    def _wait4(self, c, proc, a):
        child = c.ret_int
        if child and child > 0 and child in self.procs:
            self.emit(c, proc, "wait", self.procs[child].thread)

    def _waitid(self, c, proc, a):
        m = re.search(r"si_pid=(\d+)", ",".join(a))
        if m and int(m[1]) in self.procs and not c.errno:
            self.emit(c, proc, "wait", self.procs[int(m[1])].thread)

    # -- the result -------------------------------------------------------------------

    def replay(self, meta: dict) -> Replay:
        """The replay with the initial state: what the directory held before the command
        and the operations named (with the directories above them)."""
        need = set()
        for p in self.touched:
            parts = p.split("/")
            need.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
        init = [e for path, e in sorted(self.before.items()) if path in need]
        return Replay(ops=self.ops, init=init, meta=meta, account=self.account)


def _path_args(kind: str) -> list[bool]:
    from fslab.capture.format import SIGNATURES
    return [k == "p" for k in SIGNATURES[kind]]


def _int(text: str) -> int:
    """An integer argument as strace prints it: decimal, 0x hex or 0-led octal (modes)."""
    try:
        if len(text) > 1 and text[0] == "0" and text.isdigit():
            return int(text, 8)
        return int(text, 0)
    except (ValueError, TypeError):
        return 0


def _offset(arg: str) -> int | None:
    """An offset passed by pointer: `NULL` (the file position) or `[4096]` / `[0 => 4096]`."""
    if arg == "NULL":
        return None
    m = re.match(r"\[?\s*(-?\w+)", arg)   # the value passed, before any `=> [after]`
    return _int(m[1]) if m else 0
