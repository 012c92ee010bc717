"""fio --server on a host: reuse one that listens, or start one bound to the host's address.

fio's server has no authentication: whoever reaches its port runs any job (and any
file path) as the server's user. So fslab binds it to the one address given in
hosts.toml, never to all interfaces, and stops what it started.
"""
from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

from fslab import state
from fslab.errors import StepFailed
from fslab.teardown import stop_pid


def listening(address: str, port: int, timeout: float = 1.0) -> bool:
    """Something accepts TCP connections at address:port (fio's server does)."""
    try:
        with socket.create_connection((address, port), timeout=timeout):
            return True
    except OSError:
        return False


class FioServer:
    """One fio server, started here (and stopped by `stop`) or found running (left alone)."""

    def __init__(self, fio_address: str, address: str, port: int, netns: str | None = None):
        self.fio_address, self.address, self.port, self.netns = fio_address, address, port, netns
        self.proc: subprocess.Popen | None = None
        self.ident = f"fio-server {fio_address}" + (f" netns {netns}" if netns else "")

    def ensure(self, policy: str, log_path: Path, wait: float = 10.0) -> bool:
        """Make a server listen; True if we started it. policy: auto | start | reuse."""
        running = listening(self.address, self.port)
        if running and policy != "start":
            return False
        if running:
            raise StepFailed(f"{self.address}:{self.port} is already in use (server = \"start\")")
        if policy == "reuse":
            raise StepFailed(f"no fio server listens at {self.address}:{self.port} "
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
        with open(log_path, "ab") as log:
            # own session: a Ctrl-C at the coordinator's terminal is ours to handle, not fio's
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        # nsenter execs fio, so this pid is the server's own
        state.note("daemon", self.ident, daemon_pid=self.proc.pid,
                   match=f"--server={self.fio_address}")
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._forget()
                said = log_path.read_text(errors="replace").strip().splitlines()
                raise StepFailed(f"fio --server={self.fio_address} exited "
                                 f"{self.proc.returncode}: {said[-1] if said else 'no output'}")
            if listening(self.address, self.port, timeout=0.3):
                return True
            time.sleep(0.1)
        self.stop()
        raise StepFailed(f"fio --server={self.fio_address} did not listen within {wait:.0f}s")

    def stop(self) -> None:
        if self.proc is None:
            return
        stop_pid(self.proc.pid)
        self.proc.wait()
        self._forget()
        self.log_path.unlink(missing_ok=True)

    def _forget(self) -> None:
        state.forget("daemon", self.ident)
        self.proc = None
