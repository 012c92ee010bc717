"""`fslab capture`: a command run under strace in a directory, its trace read into a
replay (fslab/capture/format.py). The capture adds nothing to the directory: strace's
output goes to a temporary file beside it, removed afterwards."""
from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fslab.capture.format import InitEntry, Replay
from fslab.capture.interpret import Interpreter
from fslab.capture.strace import TRACED, parse_lines
from fslab.errors import FslabError
from fslab.system.proc import run


@dataclass(frozen=True)
class Captured:
    replay: Replay
    exit_code: int
    unparsed_lines: int


def snapshot(root: Path) -> dict[str, InitEntry]:
    """What a directory holds: relative path -> entry (sizes, symlink targets)."""
    out: dict[str, InitEntry] = {".": InitEntry("dir", ".")}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            full = Path(dirpath) / name
            rel = str(full.relative_to(root))
            if full.is_symlink():
                out[rel] = InitEntry("symlink", rel, target=os.readlink(full))
                if name in dirs:
                    dirs.remove(name)   # os.walk would not descend; say so
            elif full.is_dir():
                out[rel] = InitEntry("dir", rel)
            elif full.is_file():
                out[rel] = InitEntry("file", rel, size=full.stat().st_size)
    return out


def strace_argv(trace_file: Path, command: list[str]) -> list[str]:
    """-f: children and threads; -ttt: times; -y: every fd with its path; -s 0: no data
    bytes; --seccomp-bpf: the untraced calls (brk, futex, ...) never stop the tracee."""
    return ["strace", "-f", "-ttt", "-y", "-qq", "-s", "0", "--seccomp-bpf",
            "-e", "signal=none", "-e", f"trace={TRACED}", "-o", str(trace_file), "--", *command]


def capture(command: list[str], directory: Path, timeout: float) -> Captured:
    """Run `command` in `directory` under strace and read its file I/O there."""
    if not command:
        raise FslabError("fslab capture: no command given (fslab capture --out W.replay -- COMMAND...)")
    if shutil.which("strace") is None:
        raise FslabError("strace is not installed: fslab doctor --install (Debian package strace)")
    directory = directory.resolve()
    before = snapshot(directory)
    with tempfile.TemporaryDirectory(prefix="fslab-capture-") as tmp:
        trace = Path(tmp) / "trace"
        r = run(strace_argv(trace, command), check=False, timeout=timeout, cwd=str(directory))
        if not trace.exists():
            raise FslabError(f"strace did not run {shlex.join(command)}: "
                             f"{(r.stderr.strip().splitlines() or ['no output'])[-1]}")
        if r.returncode != 0:
            tail = (r.stderr.strip().splitlines() or r.stdout.strip().splitlines() or [""])[-1]
            raise FslabError(f"the command failed (exit {r.returncode}), nothing captured: "
                             f"{shlex.join(command)}: {tail}".rstrip(": "))
        with open(trace, errors="replace") as f:
            calls, skipped = parse_lines(f)
    after = snapshot(directory)
    interp = Interpreter(str(directory), before)
    interp.feed_all(calls)
    # the fidelity check compares the replay's creations and removals with these
    meta = {"command": command, "strace": _strace_version(), "calls": len(calls),
            "created": len(set(after) - set(before)), "removed": len(set(before) - set(after))}
    replay = interp.replay(meta)
    replay.meta["duration"] = replay.duration
    if not replay.ops:
        raise FslabError(f"{shlex.join(command)} did no file I/O in {directory} "
                         f"({replay.outside} calls outside it, not replayed): nothing to replay")
    return Captured(replay, r.returncode, skipped)


def _strace_version() -> str:
    r = run(["strace", "-V"], check=False, timeout=30)
    first = (r.stdout.splitlines() or [""])[0]
    return first.split()[-1] if first else "?"
