"""A remote host reached over OpenSSH: the same operations as LocalHost, run by the agent.

`ssh -o BatchMode=yes` uses the user's own configuration and keys (agent, ~/.ssh/config)
and never prompts: fslab holds no password anywhere. A dropped connection surfaces as
HostLost; the agent on the other side tears down what it made when its stdin closes,
or when the pings this side sends every few seconds stop arriving (a silent network
failure, which only ssh's keepalives notice on this side).

With transport "ssh" the same connection carries fio's: `ssh -L SOCKET:REMOTE_SOCKET`
forwards a Unix socket here (in a directory only this user can enter) to the fio
server's Unix socket on the host, in a directory the agent makes there for the run
(0700, the SSH login user's). fio's server has no authentication, so nothing of it is
on the network, and on either machine only the SSH user reaches it. (A server reused
with `server = "reuse"` is one the host's admin runs on its loopback: the forward then
goes to 127.0.0.1:PORT, which every local user of that host can reach.)
"""
from __future__ import annotations

import json
import secrets
import shlex
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from fslab.errors import StepFailed
from fslab.remote.hosts import LOOPBACK
from fslab.system.proc import kill_group


class HostLost(StepFailed):
    """The connection to the host's agent broke: every later step there fails too."""


PING_EVERY = 5.0      # seconds; the agent gives up after 60 s without a line
# An operation's reply (environment, a filesystem prepared or released, fio's server
# started): each command the agent runs has its own time limit; past this the agent hangs
CALL_S = 1800.0


# on the host: a new name per run (the agent's mkdir refuses one that exists), short
# enough for a Unix socket's 108 bytes
REMOTE_SOCKET_DIR = "/tmp/fslab-fio-{token}"


class SocketForward:
    """A Unix socket here that the SSH connection carries to fio's server on the host:
    to a Unix socket there (`remote_socket`), or to 127.0.0.1:PORT (`port`: a reused
    server the host's admin runs on its loopback)."""

    def __init__(self, port: int | None = None):
        self.port = port
        self.remote_socket = (None if port is not None else
                              REMOTE_SOCKET_DIR.format(token=secrets.token_hex(8)) + "/fio.sock")
        # mkdtemp's directory is 0700, and ssh makes the socket 0600 (StreamLocalBindMask)
        self.dir = Path(tempfile.mkdtemp(prefix="fslab-ssh-"))
        self.socket = self.dir / "fio.sock"

    @property
    def target(self) -> str:
        """Where the forward leads on the host, as ssh's -L spells it."""
        return self.remote_socket or f"{LOOPBACK}:{self.port}"

    @property
    def fio_address(self) -> str:
        """fio's --server= spelling of the host's end."""
        return f"sock:{self.remote_socket}" if self.remote_socket else f"ip:{LOOPBACK},{self.port}"

    def ssh_options(self) -> list[str]:
        # without ExitOnForwardFailure ssh would run the agent with no forward at all
        return ["-o", "ExitOnForwardFailure=yes", "-L", f"{self.socket}:{self.target}"]

    def refused(self, wait: float = 2.0) -> str | None:
        """Why a connection through the forward does not reach fio's server, if it does not.

        fio's server says nothing until the client speaks, so a connection that stays
        open for `wait` seconds reached it; one the far side ends at once did not (the
        host's sshd refused to forward, or nothing listens there)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(wait)
            try:
                s.connect(str(self.socket))
                ended = s.recv(1) == b""
            except TimeoutError:
                return None
            except OSError as e:
                return f"{self.socket}: {e.strerror or e}"
        return "the connection was closed at once" if ended else None

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


class AgentHost:
    """Drives `python3 -m fslab.remote.agent` through `transport` (e.g. an ssh command);
    `forward`: the Unix socket that command carries to fio's server (transport "ssh")."""

    def __init__(self, transport: list[str], python: str, workdir: str, timeout: float = 3600,
                 forward: SocketForward | None = None):
        # the remote shell splits this line again: `python` may be several words
        # ("sudo python3"), the workdir stays one
        self.argv = [*transport, shlex.join([*shlex.split(python), "-m", "fslab.remote.agent",
                                             "--workdir", workdir])]
        self.timeout = timeout
        self.forward = forward
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
        except (BrokenPipeError, OSError):
            raise HostLost(self._lost()) from None
        got: list[str] = []
        reader = threading.Thread(target=self._read_reply, args=(got,), daemon=True)
        reader.start()
        reader.join(CALL_S)
        if reader.is_alive():       # a hung agent: the connection goes, and the read ends
            kill_group(self.proc)
            reader.join(5)
            raise HostLost(f"the agent did not answer {op!r} within {CALL_S:g} s; connection closed")
        line = got[0] if got else ""
        if not line:
            raise HostLost(self._lost())
        reply = json.loads(line)
        if not reply["ok"]:
            raise StepFailed(reply["error"])
        return reply["result"]

    def _read_reply(self, got: list[str]) -> None:
        try:
            got.append(self.proc.stdout.readline())
        except (OSError, ValueError):
            pass

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
        started = self.call("start_server", fio_address=fio_address, address=address,
                            port=port, policy=policy)
        if self.forward is not None:
            why = self.forward.refused()
            if why:
                said = _wait_for(lambda: "; ".join(ln for ln in self._stderr
                                                   if "open failed" in ln), 1.0) or why
                setting = ("AllowStreamLocalForwarding" if self.forward.remote_socket
                           else "AllowTcpForwarding")
                raise StepFailed(
                    f"the SSH connection does not carry fio's connection to "
                    f"{self.forward.target} on that host ({said}): its sshd must allow "
                    f"that forwarding ({setting}), or set transport = \"direct\" for this host "
                    "(fio's server then listens on its address, open to whoever reaches it)")
        return started

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
            kill_group(self.proc)
            return [f"agent did not exit after teardown: {self._lost()}"]
        finally:
            if self.forward is not None:
                self.forward.close()
        bad = [ln for ln in self._stderr if ln.startswith("fslab agent teardown:")]
        return bad


def _wait_for(check, timeout: float):
    """check()'s first true value within `timeout` seconds (ssh's words come a moment
    after the event they are about), else its last one."""
    deadline = time.monotonic() + timeout
    while not (found := check()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def ssh_transport(destination: str, options: list[str],
                  forward: SocketForward | None = None) -> list[str]:
    """OpenSSH without prompts; keepalives notice a dead host within ~15 s, an
    unreachable one fails within 15 s. For each setting ssh takes the first value it
    is given, so the host's `ssh_options` come before these defaults (they may change
    them); BatchMode comes first: it always holds, and so does the forward's
    ExitOnForwardFailure."""
    fwd = forward.ssh_options() if forward is not None else []
    return ["ssh", "-T", "-o", "BatchMode=yes", *fwd[:2], *options, *fwd[2:],
            "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3",
            "-o", "ConnectTimeout=15", destination]
