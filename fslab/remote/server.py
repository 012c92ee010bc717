"""fio --server on a host: reuse one that listens, or start one bound to the host's address
or to a Unix socket.

fio's server has no authentication: whoever reaches its port runs any job (and any
file path) as the server's user. So fslab binds it to the one address given in
hosts.toml, never to all interfaces, and stops what it started. For a host reached
over SSH it listens on a Unix socket (`sock:PATH`) in a directory this agent makes
afresh, mode 0700 and owned by the SSH login user (root, or sudo's caller): no
other local user of the host can reach it, only that user's SSH connection.

fio's server forks a child per client connection and that child forks the job: they
share the server's process group (fslab starts it in a session of its own), and
stopping means stopping the whole group. Stopping only the listening process would
leave a connection's child running its job, possibly after the filesystem under it
was unmounted, i.e. writing into the bare mount point on another disk.
"""
from __future__ import annotations

import os
import signal
import shutil
import socket
import subprocess
import time
from pathlib import Path

from fslab.system import state
from fslab.errors import StepFailed, TeardownFailed

KIND = "fio-server"      # its kind in the state file (fslab cleanup stops the group)
SOCKET_DIR = "fio-socket-dir"   # the private directory of a server's Unix socket


def listening(address: str, port: int, timeout: float = 1.0) -> bool:
    """Something accepts TCP connections at address:port (fio's server does)."""
    try:
        with socket.create_connection((address, port), timeout=timeout):
            return True
    except OSError:
        return False


def socket_path(fio_address: str) -> Path | None:
    """The Unix socket of a `sock:PATH` address; None for ip:/ip6: ones."""
    return Path(fio_address[len("sock:"):]) if fio_address.startswith("sock:") else None


def accepting(path: Path, timeout: float = 1.0) -> bool:
    """Something accepts connections on the Unix socket `path`."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(str(path))
            return True
        except OSError:
            return False


def make_private_dir(path: Path) -> None:
    """A new directory only the SSH login user can enter: mkdir fails if anything is
    there already, so it is never one another user prepared. Under sudo the login
    user is sudo's caller (sshd connects to the socket as that user)."""
    os.mkdir(path, 0o700)
    os.chmod(path, 0o700)           # whatever the umask
    hand_to_login_user(path)


def hand_to_login_user(path: Path) -> None:
    """Under sudo, make `path` sudo's caller's: connecting to a Unix socket needs write
    permission on it, and fio makes its socket with root's umask."""
    uid, gid = os.environ.get("SUDO_UID"), os.environ.get("SUDO_GID")
    if uid and gid and os.geteuid() == 0:
        os.chown(path, int(uid), int(gid))


def remove_private_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


class FioServer:
    """One fio server, started here (and stopped by `stop`) or found running (left alone)."""

    def __init__(self, fio_address: str, address: str, port: int, netns: str | None = None):
        self.fio_address, self.address, self.port, self.netns = fio_address, address, port, netns
        self.proc: subprocess.Popen | None = None
        self.ident = fio_address + (f" netns {netns}" if netns else "")
        self.socket = socket_path(fio_address)
        self.where = str(self.socket) if self.socket else f"{address}:{port}"

    def _listening(self, timeout: float = 1.0) -> bool:
        if self.socket is not None:
            return accepting(self.socket, timeout)
        return listening(self.address, self.port, timeout)

    def ensure(self, policy: str, log_path: Path, wait: float = 10.0) -> bool:
        """Make a server listen; True if we started it. policy: auto | start | reuse."""
        running = self._listening()
        if running and policy != "start":
            return False
        if running:
            raise StepFailed(f"{self.where} is already in use (server = \"start\")")
        if policy == "reuse":
            raise StepFailed(f"no fio server listens at {self.where} "
                             "(server = \"reuse\"; start one there, e.g. with the systemd unit "
                             "in docs/multihost.md)")
        argv = ["fio", f"--server={self.fio_address}"]
        if self.netns:
            # enter only the network namespace: `ip netns exec` would also unshare the
            # mount namespace, and where / is not a shared mount the server would never
            # see the filesystems mounted after it started (it would write beside them)
            argv = ["nsenter", f"--net=/run/netns/{self.netns}", "--", *argv]
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path = log_path
        if self.socket is not None:
            state.note(SOCKET_DIR, str(self.socket.parent))
            try:
                make_private_dir(self.socket.parent)
            except OSError as e:    # not ours (it existed): cleanup must never remove it
                state.forget(SOCKET_DIR, str(self.socket.parent))
                raise StepFailed(f"cannot make the private directory for fio's socket "
                                 f"{self.socket.parent}: {e.strerror or e} (one already "
                                 "there is never used: another user could enter it)") from e
        with open(log_path, "ab") as log:
            # own session: a Ctrl-C at the coordinator's terminal is ours to handle, not fio's
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        # nsenter execs fio, so this pid is the server's own, and its process group's
        state.note(KIND, self.ident, pgid=self.proc.pid, match=f"--server={self.fio_address}")
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._forget()
                said = log_path.read_text(errors="replace").strip().splitlines()
                raise StepFailed(f"fio --server={self.fio_address} exited "
                                 f"{self.proc.returncode}: {said[-1] if said else 'no output'}")
            if self._listening(timeout=0.3):
                if self.socket is not None:
                    hand_to_login_user(self.socket)
                return True
            time.sleep(0.1)
        self.stop()
        raise StepFailed(f"fio --server={self.fio_address} did not listen within {wait:.0f}s")

    def stop(self) -> None:
        """Stop the server and every process it forked (connections, running jobs)."""
        if self.proc is None:
            return
        stop_group(self.proc.pid, f"--server={self.fio_address}", reap=self.proc)
        self._forget()
        self.log_path.unlink(missing_ok=True)

    def _forget(self) -> None:
        state.forget(KIND, self.ident)
        self.proc = None
        if self.socket is not None:        # the server is gone: so are its socket and dir
            remove_private_dir(self.socket.parent)
            state.forget(SOCKET_DIR, str(self.socket.parent))


def group_members(pgid: int, match: str = "") -> list[int]:
    """Live processes of process group `pgid` (whose command line contains `match`)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text()
            cmd = Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace")
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()       # state ppid pgrp ...
        if fields[0] != "Z" and int(fields[2]) == pgid and match in cmd:
            out.append(int(d))
    return out


def stop_group(pgid: int, match: str, reap: subprocess.Popen | None = None,
               timeout: float = 15.0) -> None:
    """SIGTERM to the group (only if it is still fio's server), SIGKILL after `timeout`;
    returns once none of it is left. `reap`: the leader, when it is our child."""
    if group_members(pgid, match):
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                break
            deadline = time.monotonic() + wait
            while group_members(pgid) and time.monotonic() < deadline:
                if reap is not None:
                    reap.poll()
                time.sleep(0.1)
            if not group_members(pgid):
                break
    if reap is not None:
        try:
            reap.wait(timeout=5)     # one stuck in the kernel (D state) cannot be reaped
        except subprocess.TimeoutExpired:
            pass


@state.handler(KIND)
def _cleanup(e: dict) -> None:
    """`fslab cleanup` after a crash: what is left of a server fslab started."""
    stop_group(int(e["pgid"]), e["match"])
    if group_members(int(e["pgid"])):
        raise TeardownFailed(f"fio server group {e['pgid']} does not stop")


@state.handler(SOCKET_DIR)
def _cleanup_socket_dir(e: dict) -> None:
    remove_private_dir(Path(e["id"]))
