"""Running external commands, with the output kept for error messages."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass

from fslab.errors import StepFailed


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
    """Run argv; on failure (check=True) raise StepFailed with the command's stderr."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, input=input,
                           env=env, cwd=cwd, errors="replace")
    except FileNotFoundError:
        raise StepFailed(f"command not found: {argv[0]}") from None
    except subprocess.TimeoutExpired:
        raise StepFailed(f"timed out after {timeout}s: {shlex.join(argv)}") from None
    r = Result(argv, p.returncode, p.stdout, p.stderr)
    if check and not r.ok:
        msg = (r.stderr or r.stdout).strip().splitlines()
        tail = msg[-1] if msg else ""
        raise StepFailed(f"{shlex.join(argv)} failed (exit {r.returncode}): {tail}")
    return r


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
