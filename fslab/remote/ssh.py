"""A remote host reached over OpenSSH: the same operations as LocalHost, run by the agent.

`ssh -o BatchMode=yes` uses the user's own configuration and keys (agent, ~/.ssh/config)
and never prompts: fslab holds no password anywhere. A dropped connection surfaces as
HostLost; the agent on the other side tears down what it made when its stdin closes.
"""
from __future__ import annotations

import json
import shlex
import subprocess
import threading

from fslab.errors import StepFailed


class HostLost(StepFailed):
    """The connection to the host's agent broke: every later step there fails too."""


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
        self._stderr_done = threading.Event()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _drain_stderr(self) -> None:
        for line in self.proc.stderr:
            self._stderr = (self._stderr + [line.rstrip()])[-20:]
        self._stderr_done.set()

    def call(self, op: str, **args):
        if self.proc.poll() is not None:
            raise HostLost(self._lost())
        try:
            self.proc.stdin.write(json.dumps({"op": op, "args": args}) + "\n")
            self.proc.stdin.flush()
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
        try:
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
    """OpenSSH without prompts; keepalives notice a dead host within ~15 s."""
    return ["ssh", "-T", "-o", "BatchMode=yes", "-o", "ServerAliveInterval=5",
            "-o", "ServerAliveCountMax=3", *options, destination]
