"""Running external commands, with the output kept for error messages."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from fslab.errors import StepFailed, TimedOut


@dataclass
class Result:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run(argv: list[str], *, check: bool = True, timeout: float | None = 600,
        input: str | None = None, env: dict | None = None, cwd: str | None = None) -> Result:
    """Run argv with a time limit; on failure (check=True) raise StepFailed with the
    command's stderr. The command runs in its own process group, and the whole group is
    killed when the limit passes or fslab is interrupted: a helper it forked (a FUSE
    mount helper, fio's job processes) can neither outlive fslab nor keep the output pipes
    open so that waiting for them hangs."""
    try:
        p = subprocess.Popen(argv, stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env, cwd=cwd, errors="replace", start_new_session=True)
    except FileNotFoundError:
        raise StepFailed(f"command not found: {argv[0]}") from None
    try:
        out, err = p.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(p)
        raise TimedOut(f"timed out after {timeout}s: {shlex.join(argv)}") from None
    except BaseException:
        kill_group(p)
        raise
    r = Result(argv, p.returncode, out, err)
    if check and not r.ok:
        msg = (r.stderr or r.stdout).strip().splitlines()
        # the last line, unless a usage text follows the error (mkfs.xfs): then the line before it
        usage = next((i for i, line in enumerate(msg) if line.startswith("Usage:")), None)
        msg = msg[:usage] or msg if usage is not None else msg
        tail = msg[-1] if msg else ""
        raise StepFailed(f"{shlex.join(argv)} failed (exit {r.returncode}): {tail}")
    return r


def kill_group(p: subprocess.Popen, grace: float = 10) -> None:
    """SIGKILL p, its descendants and its process group (fio's job processes each call
    setsid(), so the group alone misses them) and reap p; a process stuck in the kernel
    (D state) cannot die, so stop waiting after `grace` seconds rather than hang with it."""
    kill_family(p.pid)
    try:
        p.communicate(timeout=grace)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        for f in (p.stdin, p.stdout, p.stderr):
            try:
                f and f.close()
            except OSError:
                pass


def kill_family(pid: int) -> list["Proc"]:
    """SIGKILL pid, its descendants and its process group; the family as it was."""
    import signal
    family = process_family(pid)   # before any kill: orphans lose their parent link
    for member in {pid, *(m.pid for m in family)}:
        try:
            os.kill(member, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return family


@dataclass
class Proc:
    pid: int
    name: str
    state: str    # R, S, D, ...
    ppid: int
    pgrp: int


def _procs() -> list[Proc]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            fields = text[text.rindex(")") + 2:].split()
            out.append(Proc(int(stat.parent.name), text[text.index("(") + 1:text.rindex(")")],
                            fields[0], int(fields[1]), int(fields[2])))
        except (OSError, ValueError, IndexError):
            continue
    return out


def process_family(pid: int) -> list[Proc]:
    """pid, its descendants and its process group. fio's job processes each call setsid(),
    so its process group alone leaves them out."""
    procs = _procs()
    children: dict[int, list[Proc]] = {}
    for p in procs:
        children.setdefault(p.ppid, []).append(p)
    family = {p.pid: p for p in procs if p.pid == pid or p.pgrp == pid}
    todo = list(family)
    while todo:
        for child in children.get(todo.pop(), []):
            if child.pid not in family:
                family[child.pid] = child
                todo.append(child.pid)
    return sorted(family.values(), key=lambda p: p.pid)


def which(tool: str) -> str | None:
    return shutil.which(tool) or next(
        (p for d in ("/usr/sbin", "/sbin", "/usr/local/sbin")
         if os.access(p := os.path.join(d, tool), os.X_OK)), None)


def is_root() -> bool:
    return os.geteuid() == 0


def first_line(argv: list[str]) -> str | None:
    """First non-empty line of a version command's output, or None if it cannot run."""
    if not which(argv[0]):
        return None
    try:
        r = run(argv, check=False, timeout=20)
    except StepFailed:
        return None
    for line in (r.stdout + "\n" + r.stderr).splitlines():
        if line.strip():
            return line.strip()
    return None
