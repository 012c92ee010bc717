"""strace's output (`-f -ttt -y -qq`) read into calls: one `Call` per system call, an
interrupted call's `<unfinished ...>` and `<... resumed>` halves joined, its arguments
split at the top level (strings, structures, arrays and `-y`'s `fd</path>` kept whole)."""
from __future__ import annotations

import re
from dataclasses import dataclass

# `-y` decorates an fd (and AT_FDCWD) with its path: `3</tmp/d/x>`, `AT_FDCWD</tmp/d>`
_FD_PATH = re.compile(r"^(-?\d+|AT_FDCWD)<(.*)>$", re.S)
_LINE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(.*)$")
_RESUMED = re.compile(r"^<\.\.\. (\w+) resumed>(.*)$", re.S)
_RET = re.compile(r"^(.*)\)\s+=\s+(.*)$", re.S)
_ERR = re.compile(r"^-1 ([A-Z0-9_]+)\b")

# the calls a capture traces (strace's -e trace=): files, fds, and the process tree
TRACED = (
    "open,openat,openat2,creat,close,lseek,read,pread64,readv,preadv,preadv2,write,pwrite64,writev,"
    "pwritev,pwritev2,fsync,fdatasync,sync_file_range,ftruncate,truncate,fallocate,"
    "copy_file_range,sendfile,splice,sync,syncfs,rename,renameat,renameat2,unlink,unlinkat,mkdir,mkdirat,rmdir,"
    "link,linkat,symlink,symlinkat,stat,lstat,newfstatat,fstat,statx,access,faccessat,"
    "faccessat2,getdents64,mmap,dup,dup2,dup3,fcntl,chdir,fchdir,clone,clone3,fork,vfork,"
    "wait4,waitid,execve")


@dataclass
class Call:
    pid: int
    t: float
    name: str
    args: list[str]
    ret: str                     # as printed: "3</tmp/d/x>", "0", "-1 ENOENT (...)", "?"
    done: float = 0.0            # when it returned (t: when it was entered)

    @property
    def errno(self) -> str | None:
        m = _ERR.match(self.ret)
        return m[1] if m else None

    @property
    def ret_int(self) -> int | None:
        m = re.match(r"^(-?\d+)", self.ret)
        return int(m[1]) if m else None

    @property
    def ret_path(self) -> str | None:
        """The path `-y` printed beside a returned fd."""
        m = re.match(r"^-?\d+<(.*)>", self.ret, re.S)
        return m[1] if m else None


def split_args(text: str) -> list[str]:
    """Top-level comma-separated arguments of one call."""
    out, cur, depth, i, n = [], [], 0, 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':                     # a string, with backslash escapes, maybe "..."
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if c == "<" and cur and (cur[-1][-1:].isdigit() or "".join(cur).endswith("AT_FDCWD")):
            j = text.find(">", i)      # -y's path annotation
            j = n - 1 if j < 0 else j
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    if cur or out:
        out.append("".join(cur).strip())
    return out


# calls whose effect on the fd table and the process tree comes at their entry: close
# takes the fd out of the table before it flushes the file (a slow close's fd number can be
# returned by another thread's open before the close returns); a child exists, with its
# copy of the table, before clone returns in the parent (its first calls can come first)
AT_ENTRY = frozenset({"close", "clone", "clone3", "fork", "vfork"})


def parse_lines(lines) -> tuple[list[Call], int]:
    """(the complete calls in the order the kernel did them, lines not understood).

    strace writes one tracer's observations in order, so a line's position is the order
    of events across threads. A call takes effect at its return (an open's fd is bound
    then, a wait's child is over then), except the AT_ENTRY calls, which take effect when
    entered: ordering by entry (as before) bound an open still unfinished in thread A
    before thread B's close of the same fd number, which then removed A's new file."""
    calls: list[tuple[int, Call]] = []
    pending: dict[int, tuple[float, str, str, int]] = {}   # pid -> (t, name, args, line)
    skipped = 0
    for n, raw in enumerate(lines):
        m = _LINE.match(raw.rstrip("\n"))
        if not m:
            skipped += bool(raw.strip())
            continue
        pid, t, body = int(m[1]), float(m[2]), m[3]
        if body.startswith(("+++", "---")):             # exits, signals
            continue
        entered, done, at = t, t, n
        r = _RESUMED.match(body)
        if r:
            if pid not in pending:
                skipped += 1
                continue
            entered, name, head, at = pending.pop(pid)
            body = f"{name}({head}{r[2]}"
        elif body.endswith("<unfinished ...>"):
            name, _, head = body[:-len("<unfinished ...>")].rstrip().partition("(")
            pending[pid] = (t, name, head, n)
            continue
        name, paren, rest = body.partition("(")
        rm = _RET.match(rest)
        if not paren or not rm:
            skipped += 1
            continue
        calls.append((at if name in AT_ENTRY else n,
                      Call(pid, entered, name, split_args(rm[1]), rm[2].strip(), done)))
    calls.sort(key=lambda kc: kc[0])
    return [c for _, c in calls], skipped


def fd_of(arg: str) -> tuple[int | None, str | None]:
    """(fd, the path -y printed) of an fd argument; AT_FDCWD's fd is None."""
    m = _FD_PATH.match(arg)
    if not m:
        try:
            return int(arg), None
        except ValueError:
            return None, None
    return (None if m[1] == "AT_FDCWD" else int(m[1])), m[2]


def string(arg: str) -> str | None:
    """A string argument's text (octal and C escapes undone), None if not a string."""
    if not arg.startswith('"'):
        return None
    body = arg[1:arg.rfind('"')] if arg.count('"') >= 2 else arg[1:]
    return body.encode("latin-1", "backslashreplace").decode("unicode_escape").encode(
        "latin-1").decode("utf-8", "surrogateescape")
