"""The replay file: a command's file I/O, one line per operation (docs/replay.md).

    fslab-replay 2
    meta command ["make", "-j2"]
    meta duration 1.532104
    init dir "src"
    init file "src/main.c" 1834
    left elsewhere read 380 5242880
    left elsewhere metadata 32 0
    mmap "build/app" 2 16384 r
    ops
    0.000412 1 open 3 "src/main.c" O_RDONLY 0
    0.000431 1 read 3 - 1834
    0.000502 1 close 3
    0.002113 2 write 4 - 4096 !ENOSPC

Fields are separated by one space; paths are JSON strings (relative to the captured
directory); a handle is the capture's own number for an open file (never a raw fd: fds
are reused, handles are not); an offset is `-` for the file's current position; sizes
are the bytes the call moved when captured (never the bytes themselves). A trailing
`!ERRNO` says the call failed when captured with that errno. Threads are numbered in
the order they first appear; `spawn T` and `wait T` keep a child's start after its
parent's fork and a parent's wait after the child's end.

`left WHERE KIND CALLS BYTES` and `mmap PATH COUNT BYTES r|w` are the capture's account of
what it left out (fslab/capture/account.py). Version 1 had `outside CALLS` (one count) and
`mmap PATH COUNT`; it is still read.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from fslab.capture.account import Account, Left, Mapped
from fslab.errors import FslabError

MAGIC = "fslab-replay"
VERSION = 2
READS_VERSIONS = ("1", "2")

# operation -> its argument kinds: h handle, p path, o offset (int or None), n int,
# s a symbolic word (flags), t a thread number, x a literal string (a symlink's target)
SIGNATURES: dict[str, str] = {
    "open": "hpsn", "close": "h", "read": "hon", "write": "hon", "seek": "hns",
    "fsync": "h", "fdatasync": "h", "sync_file_range": "hnn", "ftruncate": "hn",
    "truncate": "pn", "fallocate": "hnnn", "copy": "hohon",
    "rename": "pp", "unlink": "p", "rmdir": "p", "mkdir": "pn", "link": "pp",
    "symlink": "xp", "stat": "p", "lstat": "p", "access": "p", "fstat": "h",
    "getdents": "h", "spawn": "t", "wait": "t", "syncfs": "",
}
# what each operation reads from or writes to a file (fidelity's bytes)
DATA_READS = {"read", "copy"}
DATA_WRITES = {"write", "copy"}
# what flushes written data to the device (the account's syncs)
SYNC_KINDS = {"fsync", "fdatasync", "sync_file_range", "syncfs"}


@dataclass(frozen=True)
class Op:
    t: float                 # seconds since the capture's first call
    thread: int
    kind: str
    args: tuple
    errno: str | None = None   # the errno the call failed with when captured

    def line(self) -> str:
        parts = [f"{self.t:.6f}", str(self.thread), self.kind]
        for kind, a in zip(SIGNATURES[self.kind], self.args):
            if kind in "px":
                parts.append(json.dumps(a))
            elif kind == "o":
                parts.append("-" if a is None else str(a))
            else:
                parts.append(str(a))
        if self.errno:
            parts.append("!" + self.errno)
        return " ".join(parts)

    @property
    def size(self) -> int:
        """The bytes a data operation moved when captured (0 for the others)."""
        return self.args[-1] if self.kind in ("read", "write", "copy") else 0


@dataclass(frozen=True)
class InitEntry:
    kind: str                 # "dir" | "file" | "symlink"
    path: str
    size: int = 0             # a file's size
    target: str = ""          # a symlink's target


@dataclass
class Replay:
    """A captured workload: its initial state, what was left out, its operations."""
    ops: list[Op]
    init: list[InitEntry] = field(default_factory=list)
    meta: dict[str, object] = field(default_factory=dict)
    account: Account = field(default_factory=Account)   # what the capture left out

    @property
    def outside(self) -> int:
        """Calls not replayed (outside the directory, or on fds the capture could not follow)."""
        return self.account.calls("elsewhere") + self.account.calls("here")

    @property
    def mmaps(self) -> dict[str, Mapped]:
        return self.account.mmaps

    @property
    def threads(self) -> list[int]:
        return sorted({o.thread for o in self.ops})

    def thread_counts(self) -> tuple[int, int]:
        """(threads that did I/O in the directory, threads that only started or waited for
        others or did nothing here): both are replayed, only the first issue calls."""
        named = {o.thread for o in self.ops} | {o.args[0] for o in self.ops
                                                 if o.kind in ("spawn", "wait")}
        io = {o.thread for o in self.ops if o.kind not in ("spawn", "wait")}
        return len(io), len(named - io)

    @property
    def duration(self) -> float:
        return max((o.t for o in self.ops), default=0.0)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for o in self.ops:
            out[o.kind] = out.get(o.kind, 0) + 1
        return out

    def data_bytes(self) -> tuple[int, int]:
        """(bytes read, bytes written) by the successful data operations."""
        r = sum(o.size for o in self.ops if o.kind in DATA_READS and not o.errno)
        w = sum(o.size for o in self.ops if o.kind in DATA_WRITES and not o.errno)
        return r, w

    def text(self) -> str:
        lines = [f"{MAGIC} {VERSION}"]
        lines += [f"meta {k} {json.dumps(v)}" for k, v in self.meta.items()]
        for e in self.init:
            tail = f" {e.size}" if e.kind == "file" else f" {json.dumps(e.target)}" \
                if e.kind == "symlink" else ""
            lines.append(f"init {e.kind} {json.dumps(e.path)}{tail}")
        lines += [f"left {w} {k} {v.calls} {v.bytes}"
                  for (w, k), v in sorted(self.account.left.items())]
        lines += [f"mmap {json.dumps(p)} {m.count} {m.bytes} {'w' if m.writable else 'r'}"
                  for p, m in sorted(self.mmaps.items())]
        lines.append("ops")
        lines += [o.line() for o in self.ops]
        return "\n".join(lines) + "\n"

    def write(self, path: Path) -> None:
        path.write_text(self.text())


class _Quoted(str):
    """A field that was a JSON string (a path): never an `!ERRNO`."""


def _fields(rest: str) -> list[str]:
    """Space-separated fields, a JSON string (which may hold spaces) kept whole."""
    out, i = [], 0
    dec = json.JSONDecoder()
    while i < len(rest):
        if rest[i] == " ":
            i += 1
        elif rest[i] == '"':
            s, end = dec.raw_decode(rest, i)
            out.append(_Quoted(s))
            i = end
        else:
            end = rest.find(" ", i)
            end = len(rest) if end < 0 else end
            out.append(rest[i:end])
            i = end
    return out


def _arg(kind: str, text: str):
    if kind in "px":
        return text
    if kind == "o":
        return None if text == "-" else int(text)
    if kind == "s":
        return text
    return int(text)


def parse(text: str, name: str = "replay file") -> Replay:
    """A replay file's text read back; a file of another version or a malformed line is
    refused with one line naming it."""
    lines = text.splitlines()
    head = lines[0].split() if lines else []
    if len(head) != 2 or head[0] != MAGIC:
        raise FslabError(f"{name}: not an fslab replay file (its first line should be "
                         f"'{MAGIC} {VERSION}'; make one with fslab capture)")
    if head[1] not in READS_VERSIONS:
        raise FslabError(f"{name}: replay format version {head[1]}, this fslab reads versions "
                         f"{' and '.join(READS_VERSIONS)}: capture the command again with this "
                         "fslab")
    r = Replay(ops=[])
    in_ops = False
    for n, line in enumerate(lines[1:], start=2):
        if not line or line.startswith("#"):
            continue
        try:
            if in_ops:
                r.ops.append(_op(line))
                continue
            word, _, rest = line.partition(" ")
            if word == "ops":
                in_ops = True
            elif word == "meta":
                key, _, value = rest.partition(" ")
                r.meta[key] = json.loads(value)
            elif word == "init":
                kind, *f = _fields(rest)
                r.init.append(InitEntry(kind, f[0], int(f[1]) if kind == "file" else 0,
                                        f[1] if kind == "symlink" else ""))
            elif word == "left":
                where, kind, calls, size = rest.split(" ")
                r.account.left[(where, kind)] = Left(int(calls), int(size))
            elif word == "outside":            # version 1: one count, not split
                r.account.split = False
                r.account.left[("elsewhere", "calls")] = Left(int(rest), 0)
            elif word == "mmap":
                p, count, *size = _fields(rest)   # version 1: no size, no r|w
                # str(): a key orjson accepts (a _Quoted is not)
                r.mmaps[str(p)] = Mapped(int(count), int(size[0]) if size else 0,
                                         size[1:] == ["w"])
            else:
                raise ValueError(f"unknown line kind {word!r}")
        except (ValueError, IndexError, KeyError) as e:
            raise FslabError(f"{name}:{n}: malformed line ({e}): {line[:80]}") from None
    return r


def _op(line: str) -> Op:
    t, thread, kind, *rest = _fields(line)
    errno = None
    if rest and not isinstance(rest[-1], _Quoted) and rest[-1].startswith("!"):
        errno = rest.pop()[1:]
    sig = SIGNATURES[kind]
    if len(rest) != len(sig):
        raise ValueError(f"{kind} takes {len(sig)} arguments, not {len(rest)}")
    return Op(float(t), int(thread), kind, tuple(_arg(k, a) for k, a in zip(sig, rest)), errno)


def load(path: Path) -> Replay:
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise FslabError(f"replay file {path}: {e.strerror}") from None
    return parse(text, str(path))
