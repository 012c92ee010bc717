"""Running an application's commands: as its unprivileged user, with a time limit, output
to a kept file, and the whole family killed on expiry or Ctrl-C."""
from __future__ import annotations

import os
import pwd
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from fslab.errors import StepFailed
from fslab.system import deadline
from fslab.system.proc import kill_group


@dataclass(frozen=True)
class Account:
    """Who runs the program: an unprivileged user when fslab is root (PostgreSQL refuses
    to run as root), else fslab's own user."""
    user: str | None
    uid: int
    gid: int

    @classmethod
    def for_(cls, name: str) -> "Account":
        if os.geteuid() != 0:
            return cls(None, os.getuid(), os.getgid())
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            raise StepFailed(f"no user {name!r} to run the program as (its Debian package "
                             "creates it)") from None
        return cls(name, pw.pw_uid, pw.pw_gid)

    @classmethod
    def current(cls) -> "Account":
        """fslab's own user (a program that may run as root)."""
        return cls(None, os.getuid(), os.getgid())

    def own(self, path: Path, mode: int = 0o700) -> Path:
        path.mkdir(parents=True, exist_ok=True)
        os.chown(path, self.uid, self.gid)
        path.chmod(mode)
        return path

    def reach(self, path: Path) -> None:
        """Let the program's user walk down to `path`: fslab's work directory is private
        (0700), so its directories on the way get the others' search bit (x, not r: their
        contents cannot be listed)."""
        if self.user is None:
            return
        for d in [path, *path.parents]:
            mode = d.stat().st_mode
            if not mode & 0o001:
                d.chmod((mode & 0o7777) | 0o001)

    def popen_args(self) -> dict:
        return ({"user": self.uid, "group": self.gid, "extra_groups": []}
                if self.user is not None else {})


@dataclass
class Finished:
    returncode: int
    elapsed_s: float
    cpu_s: float              # the command's own CPU (user + system, its children included)


def exit_text(returncode: int) -> str:
    """'exit 1', or for a process a signal ended 'killed by SIGKILL' (Popen's -9)."""
    if returncode >= 0:
        return f"exit {returncode}"
    try:
        return f"killed by {signal.Signals(-returncode).name}"
    except ValueError:
        return f"killed by signal {-returncode}"


def tail(path: Path, lines: int = 8) -> str:
    """The last lines of a log, joined with ' | ' for a one-line failure message."""
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:] if line.strip())


def start(argv: list[str], account: Account, log: Path, *, env: dict | None = None,
          cwd: Path | None = None, stdout: Path | None = None) -> subprocess.Popen:
    """Start argv in its own session (killed as one family), stderr (and stdout unless
    `stdout` is given) appended to `log`."""
    with open(log, "ab") as err, open(stdout or log, "ab") as out:
        try:
            return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    env=env, cwd=cwd, start_new_session=True,
                                    **account.popen_args())
        except FileNotFoundError:
            raise StepFailed(f"command not found: {argv[0]}") from None


def run(argv: list[str], account: Account, log: Path, timeout: float, *,
        env: dict | None = None, cwd: Path | None = None, stdout: Path | None = None,
        check: bool = True) -> Finished:
    """Run argv to its end within `timeout` seconds; a failure (check) or an expiry raises
    StepFailed with the log's last lines."""
    with open(log, "ab") as f:
        f.write(f"$ {shlex.join(argv)}\n".encode())
    t0 = time.perf_counter()
    p = start(argv, account, log, env=env, cwd=cwd, stdout=stdout)
    try:
        status, ru = deadline.wait(p.pid, timeout)
    except deadline.Hung as e:
        raise StepFailed(f"{Path(argv[0]).name} {e}: {tail(log)}") from None
    except BaseException:       # Ctrl-C, SIGTERM: the program's family goes too
        kill_group(p)
        raise
    p.returncode = os.waitstatus_to_exitcode(status)
    done = Finished(p.returncode, time.perf_counter() - t0, ru.ru_utime + ru.ru_stime)
    if check and p.returncode != 0:
        raise StepFailed(f"{Path(argv[0]).name} failed ({exit_text(p.returncode)}): "
                         f"{tail(stdout or log, 4) or tail(log, 4)}")
    return done
