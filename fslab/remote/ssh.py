"""A remote host reached over OpenSSH: the same operations as LocalHost, run by the agent.

`ssh -o BatchMode=yes` uses the user's own configuration and keys (agent, ~/.ssh/config)
and never prompts: fslab holds no password anywhere. A dropped connection surfaces as
HostLost; the agent on the other side tears down what it made when its stdin closes,
or when the pings this side sends every few seconds stop arriving (a silent network
failure, which only ssh's keepalives notice on this side).
"""
from __future__ import annotations

import json
import shlex
import subprocess
import threading

from fslab.errors import StepFailed


class HostLost(StepFailed):
    """The connection to the host's agent broke: every later step there fails too."""


PING_EVERY = 5.0      # seconds; the agent gives up after 60 s without a line


class AgentHost:
    """Drives `python3 -m fslab.remote.agent` through `transport` (e.g. an ssh command)."""

    def __init__(self, transport: list[str], python: str, workdir: str, timeout: float = 3600):
        # the remote shell splits this line again: `python` may be several words
        # ("sudo python3"), the workdir stays one
        self.argv = [*transport, shlex.join([*shlex.split(python), "-m", "fslab.remote.agent",
                                             "--workdir", workdir])]
        self.timeout = timeout
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True)
        self._stderr: list[str] = []
        self._write_lock = threading.Lock()      # requests and pings share stdin
        self._closed = threading.Event()
        self._stderr_done = threading.Event()
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        threading.Thread(target=self._ping, daemon=True).start()

    def _drain_stderr(self) -> None:
        for line in self.proc.stderr:
            self._stderr = (self._stderr + [line.rstrip()])[-20:]
        self._stderr_done.set()

    def _send(self, message: dict) -> None:
        with self._write_lock:
            self.proc.stdin.write(json.dumps(message) + "\n")
            self.proc.stdin.flush()

    def _ping(self) -> None:
        """Tell the agent every few seconds that this side is still there."""
        while not self._closed.wait(PING_EVERY):
            try:
                self._send({"op": "ping"})
            except (OSError, ValueError):     # the connection is gone, or closed by us
                return

    def lost(self) -> str | None:
        """Why the connection is gone, if it is."""
        return self._lost() if self.proc.poll() is not None else None

    def call(self, op: str, **args):
        if self.proc.poll() is not None:
            raise HostLost(self._lost())
        try:
            self._send({"op": op, "args": args})
            line = self.proc.stdout.readline()
        except (BrokenPipeError, OSError):
            raise HostLost(self._lost()) from None
        if not line:
            raise HostLost(self._lost())
        reply = json.loads(line)
        if not reply["ok"]:
            raise StepFailed(reply["error"])
        return reply["result"]

    def _lost(self) -> str:
        """Why the agent is gone, in its own or ssh's last words."""
        try:    # its output ended: the exit status and last words follow in a moment
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        self._stderr_done.wait(2)
        said = " | ".join(self._stderr[-3:]) or "no message"
        if code is None or code == 255:          # 255: ssh's own failure
            return f"connection to the agent lost (ssh exit {code}): {said}"
        return f"the agent exited with status {code}: {said}"

    # the LocalHost operations --------------------------------------------------------
    def environment(self, fs_names: list[str]) -> dict:
        return self.call("environment", fs_names=fs_names)

    def start_server(self, fio_address: str, address: str, port: int, policy: str) -> dict:
        return self.call("start_server", fio_address=fio_address, address=address, port=port,
                         policy=policy)

    def prepare(self, spec: dict, size_bytes: int, label: str) -> dict:
        return self.call("prepare", spec=spec, size_bytes=size_bytes, label=label)

    def release(self, label: str) -> dict:
        return self.call("release", label=label)

    def close(self) -> list[str]:
        """Closing stdin makes the agent tear down and exit; wait for it to finish."""
        self._closed.set()
        try:
            with self._write_lock:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return [f"agent did not exit after teardown: {self._lost()}"]
        bad = [ln for ln in self._stderr if ln.startswith("fslab agent teardown:")]
        return bad


def ssh_transport(destination: str, options: list[str]) -> list[str]:
    """OpenSSH without prompts; keepalives notice a dead host within ~15 s, an
    unreachable one fails within 15 s. For each setting ssh takes the first value it
    is given, so the host's `ssh_options` come before these defaults (they may change
    them); BatchMode comes first: it always holds."""
    return ["ssh", "-T", "-o", "BatchMode=yes", *options, "-o", "ServerAliveInterval=5",
            "-o", "ServerAliveCountMax=3", "-o", "ConnectTimeout=15", destination]
