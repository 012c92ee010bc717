"""Git histories for aging (Conway et al., FAST'17): a generator, and replay by `git pull`.

The generator writes a deterministic, realistic source-code history with
`git fast-import` (fast: no working tree, one process): an initial tree of
source-like text files in a deep directory hierarchy, then commits that edit,
add, delete and rename files. File sizes follow a log-normal distribution
fitted to source trees (median ~6 KiB, long tail). Same seed and sizes -> the
same commit SHAs, so a resumed run can check it replays the same history.

Replay is the study's own command, one commit at a time:
    git pull --no-edit -q -s recursive -X theirs <src> <sha>
with automatic gc disabled, so loose objects accumulate as they did in the study.
"""
from __future__ import annotations

import hashlib
import math
import os
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path

from fslab.errors import StepFailed
from fslab.system.proc import Result, kill_group, run

GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
           "GIT_AUTHOR_NAME": "fslab", "GIT_AUTHOR_EMAIL": "fslab@localhost",
           "GIT_COMMITTER_NAME": "fslab", "GIT_COMMITTER_EMAIL": "fslab@localhost"}

WORDS = ("static int void struct return if else for while unsigned long char const "
         "size_t buffer count index device driver queue lock unlock spin mutex alloc free "
         "init exit probe remove read write flags mask offset length error status config "
         "node list head next prev entry table page block inode sector request reply "
         "timer event handler callback irq dma map unmap register value data info debug").split()
DIRS = ("drivers net fs kernel mm arch include lib crypto sound block security tools "
        "core common util platform generic x86 arm ext io sched power usb pci scsi "
        "media gpu input hid char misc staging firmware test docs").split()
EXTS = (".c", ".c", ".c", ".h", ".h", ".S", ".txt", ".py", ".sh", ".rst")


def git(args: list[str], cwd: str | Path, check: bool = True, timeout: float = 600,
        input: str | None = None) -> Result:
    return run(["git", *args], cwd=str(cwd), check=check, timeout=timeout, input=input,
               env={**os.environ, **GIT_ENV})


def init_repo(path: Path) -> None:
    """An empty repository that never garbage-collects (the study disabled gc)."""
    path.mkdir(parents=True, exist_ok=True)
    git(["init", "-q"], path)
    git(["config", "gc.auto", "0"], path)
    git(["config", "gc.autoDetach", "false"], path)


def pull(repo: Path, src: str, sha: str, timeout: float = 3600) -> Result:
    """One replay step; never raises for git's own failures (the caller logs them)."""
    return git(["pull", "--no-edit", "-q", "-s", "recursive", "-X", "theirs", src, sha],
               repo, check=False, timeout=timeout)


def recover(repo: Path) -> list[str]:
    """After a crash mid-pull: drop stale locks and reset the checkout to HEAD."""
    done = []
    for lock in (repo / ".git").glob("*.lock"):
        lock.unlink()
        done.append(f"removed {lock.name}")
    if git(["rev-parse", "-q", "--verify", "HEAD"], repo, check=False).ok:
        git(["reset", "-q", "--hard", "HEAD"], repo, check=False)
        done.append("git reset --hard HEAD")
    return done


def first_parent_commits(src: str, limit: int, ref: str = "HEAD") -> list[str]:
    """The oldest `limit` commits of src's first-parent history, oldest first."""
    r = git(["rev-list", "--first-parent", "--reverse", ref], src, timeout=600)
    return r.stdout.split()[:limit]


def cache_root() -> Path:
    """Where fetched histories are kept between runs (a kernel clone is gigabytes)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fslab" / "git"


def fetch(url: str, root: Path | None = None, probe_timeout: float = 30,
          clone_timeout: float = 12 * 3600) -> tuple[Path | None, str]:
    """A local bare clone of `url` (made once, then reused): (path, "") or (None, why not).

    A quick `git ls-remote` first, so a machine without network says so in seconds
    instead of waiting out a clone."""
    root = root or cache_root()
    dest = root / (hashlib.sha1(url.encode()).hexdigest()[:12] + ".git")
    if (dest / "fslab-complete").exists():
        return dest, ""
    import shutil
    partial = dest.with_suffix(".partial")

    def attempt(argv: list[str], timeout: float) -> str:
        try:
            r = run(argv, check=False, timeout=timeout, env={**os.environ, **GIT_ENV})
        except StepFailed as e:     # timed out
            return str(e)
        lines = [ln for ln in (r.stderr or r.stdout).strip().splitlines() if ln.strip()]
        # git's own reason is its first fatal line; advice about access rights follows it
        fatal = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]
        return "" if r.ok else ((fatal or lines or [f"exit {r.returncode}"])[0])
    why = attempt(["git", "ls-remote", "--heads", url], probe_timeout)
    if why:
        return None, f"it could not be reached ({why})"
    shutil.rmtree(partial, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    why = attempt(["git", "clone", "-q", "--bare", "--no-tags", "--single-branch", url,
                   str(partial)], clone_timeout)
    if why:
        shutil.rmtree(partial, ignore_errors=True)
        return None, f"cloning it failed ({why})"
    git(["config", "uploadpack.allowAnySHA1InWant", "true"], partial)
    shutil.rmtree(dest, ignore_errors=True)
    partial.rename(dest)
    (dest / "fslab-complete").touch()
    return dest, ""


# --- the generator ------------------------------------------------------------

@dataclass(frozen=True)
class HistorySpec:
    seed: int
    files: int          # files in the initial tree
    commits: int        # commits after the initial one
    median_bytes: int = 6 * 1024
    sigma: float = 1.3  # log-normal spread: most files small, a few hundred KiB

    def key(self) -> str:
        return hashlib.sha1(repr(self).encode()).hexdigest()[:12]


class SourceText:
    """Source-like lines drawn from a fixed vocabulary (compressible like code, not constant)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.lines = [self._line() for _ in range(20000)]

    def _line(self) -> str:
        r = self.rng
        indent = "\t" * r.choice((0, 1, 1, 2, 2, 3))
        words = " ".join(r.choice(WORDS) for _ in range(r.randint(1, 9)))
        end = r.choice((";", ";", " {", "", ")", " */"))
        return f"{indent}{words}{end}\n"

    def chunk(self, nbytes: int) -> list[str]:
        out, size = [], 0
        i = self.rng.randrange(len(self.lines))
        while size < nbytes:
            ln = self.lines[i % len(self.lines)]
            out.append(ln)
            size += len(ln)
            i += self.rng.choice((1, 1, 1, 7, 13))
        return out


def lognormal_size(rng: random.Random, median: int, sigma: float,
                   lo: int = 64, hi: int = 512 * 1024) -> int:
    """A file size: log-normal around `median`, clamped to [lo, hi] bytes."""
    return int(min(hi, max(lo, rng.lognormvariate(math.log(median), sigma))))


def generate(dest: Path, spec: HistorySpec) -> list[str]:
    """Create (or reuse) the repository at dest; return its commits, oldest first."""
    stamp = dest / ".git" / "fslab-history"
    if stamp.exists() and stamp.read_text().split("\n", 1)[0] == spec.key():
        return stamp.read_text().split("\n", 1)[1].split()
    if dest.exists():
        import shutil
        shutil.rmtree(dest)
    init_repo(dest)
    git(["config", "uploadpack.allowAnySHA1InWant", "true"], dest)
    p = subprocess.Popen(["git", "fast-import", "--quiet", "--date-format=raw"], cwd=dest,
                         stdin=subprocess.PIPE, env={**os.environ, **GIT_ENV})
    try:
        _stream(p.stdin, spec)
        p.stdin.close()
        if p.wait(timeout=3600) != 0:
            raise StepFailed(f"git fast-import failed (exit {p.returncode}) in {dest}")
    except BaseException:
        kill_group(p)           # and stop waiting for one stuck in the kernel
        raise
    git(["checkout", "-q", "main"], dest)
    shas = git(["rev-list", "--reverse", "main"], dest).stdout.split()
    stamp.write_text(spec.key() + "\n" + "\n".join(shas) + "\n")
    return shas


def _stream(out, spec: HistorySpec) -> None:
    rng = random.Random(spec.seed)
    text = SourceText(rng)
    dirs = _tree(rng, max(16, spec.files // 10))
    files: dict[str, list[str]] = {}

    def new_path() -> str:
        while True:
            name = f"{rng.choice(WORDS)}_{rng.choice(WORDS)}{rng.choice(EXTS)}"
            path = f"{rng.choice(dirs)}/{name}"
            if path not in files:
                return path

    def size() -> int:
        return lognormal_size(rng, spec.median_bytes, spec.sigma)

    def emit(data: bytes) -> None:
        out.write(b"data %d\n" % len(data) + data + b"\n")

    t = 1_500_000_000
    for n in range(spec.commits + 1):
        ops: list[bytes] = []
        if n == 0:
            for _ in range(spec.files):
                path = new_path()
                files[path] = text.chunk(size())
                ops.append(_modify(path, files[path]))
        else:
            ops = _change(rng, text, files, new_path, size, dirs)
        out.write(b"commit refs/heads/main\nmark :%d\n" % (n + 1))
        for who in (b"author", b"committer"):
            out.write(b"%s fslab <fslab@localhost> %d +0000\n" % (who, t + n * 3600))
        emit(f"commit {n}: {len(ops)} changes".encode())
        if n:
            out.write(b"from :%d\n" % n)
        for op in ops:
            out.write(op)
        out.write(b"\n")


def _tree(rng: random.Random, count: int) -> list[str]:
    """A deep directory tree: each new directory hangs under a random existing one."""
    dirs = [rng.choice(DIRS) for _ in range(4)]
    while len(dirs) < count:
        # half the time extend one of the newest directories: long chains, as in real trees
        parent = rng.choice(dirs) if rng.random() < 0.5 else rng.choice(dirs[-3:])
        if parent.count("/") < 7:
            dirs.append(f"{parent}/{rng.choice(DIRS)}{rng.randint(0, 9) if rng.random() < .3 else ''}")
    return sorted(set(dirs))


def _modify(path: str, lines: list[str]) -> bytes:
    data = "".join(lines).encode()
    return b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data)


def _change(rng, text: SourceText, files: dict[str, list[str]], new_path, size, dirs) -> list[bytes]:
    """One commit's worth of edits, adds, deletes and renames (mostly edits, as in real trees)."""
    ops: list[bytes] = []
    for _ in range(rng.choice((1, 1, 2, 3, 5, 8))):
        kind = rng.choices(("edit", "add", "delete", "rename"), (70, 14, 8, 8))[0]
        if kind != "add" and len(files) < 10:
            kind = "add"
        if kind == "add":
            path = new_path()
            files[path] = text.chunk(size())
            ops.append(_modify(path, files[path]))
            continue
        path = rng.choice(list(files))   # insertion order: deterministic
        if kind == "delete":
            del files[path]
            ops.append(b"D %s\n" % path.encode())
        elif kind == "rename":
            new = new_path()
            files[new] = files.pop(path)
            ops.append(b"R %s %s\n" % (path.encode(), new.encode()))
        else:
            lines = files[path]
            at = rng.randrange(len(lines) + 1)
            cut = rng.randint(0, min(20, len(lines) - at))
            lines[at:at + cut] = text.chunk(rng.randint(40, 2000))
            ops.append(_modify(path, lines))
    return ops
