"""A host reached over SSH, for real: OpenSSH's sshd inside a network namespace.

The test starts its own sshd (throwaway host and client keys, its own config, a free
port on the namespace's private address) with `ip netns exec`, so it has the
namespace's network and a mount namespace of its own, like a separate machine: what
the agent mounts there is invisible here and is looked at through /proc/<sshd>/.
fslab reaches it exactly as it reaches a remote host: `ssh -T -o BatchMode=yes ...
python -m fslab.remote.agent`, with the test's ssh config (-F), and runs fio from this
side with `--client`. A second host is a local namespace host (ssh = "local").
No system sshd is started or enabled (scripts/apt-install); the test's sshd, the
namespaces and everything fslab made are gone afterwards, also when a test fails.
"""
from __future__ import annotations

import errno
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from conftest import REPO, fslab_cmd
from test_remote import NamespaceHosts, ensure_iproute2, sh, wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces, loop devices, mounts)"),
    pytest.mark.skipif(not shutil.which("fio"), reason="fio is not installed"),
]

SSHD = "/usr/sbin/sshd"

PLAN = """
[run]
profile = "smoke"
iterations = {iterations}
seed = 11

[[filesystem]]
name = "ext4"

[[suite]]
kind = "fio"
workloads = {workloads}
[suite.fio]
size = "16M"
runtime = "1"
"""


def ensure_sshd() -> None:
    """openssh-server's sshd, installed without starting or enabling ssh.service."""
    if not Path(SSHD).exists():
        subprocess.run([str(REPO / "scripts/apt-install"), "openssh-server"], check=True,
                       capture_output=True, timeout=600)


# processes ---------------------------------------------------------------------------
def processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every live process."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = Path(f"/proc/{d}/stat").read_text().rpartition(")")[2].split()
            cmd = Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                errors="replace").strip()
        except OSError:
            continue
        if stat[0] != "Z":
            out[int(d)] = (int(stat[1]), cmd)
    return out


def descendants(pid: int, procs: dict[int, tuple[int, str]] | None = None) -> list[int]:
    procs = processes() if procs is None else procs
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        for p, (ppid, _) in procs.items():
            if ppid == parent:
                found.append(p)
                frontier.append(p)
    return found


def matching(*words: str, netns: str | None = None) -> list[str]:
    """Live processes whose command line has every word (and, given `netns`, that run
    in that network namespace)."""
    return [f"{p} {cmd}" for p, (_, cmd) in processes().items()
            if all(w in cmd for w in words) and (netns is None or in_netns(p, netns))]


def in_netns(pid: int, netns: str) -> bool:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(f"/run/netns/{netns}").st_ino
    except OSError:
        return False


# the test's sshd ---------------------------------------------------------------------
class SshHost:
    """sshd in namespace `ns` at `address`; keys, configs, state all under `d`."""

    def __init__(self, ns: dict, d: Path, extra_config: str = ""):
        self.ns, self.d, self.address = ns, d, ns["address"]
        self.extra_config = extra_config      # more sshd_config lines
        self.proc: subprocess.Popen | None = None
        self.made_run_sshd = False

    def start(self) -> "SshHost":
        d = self.d
        d.mkdir(parents=True)
        for name in ("host_key", "client_key"):
            sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"fslab-test-{name}",
               "-f", str(d / name))
        shutil.copy(d / "client_key.pub", d / "authorized_keys")
        self.port = int(sh("ip", "netns", "exec", self.ns["netns"], sys.executable, "-c",
                           "import socket; s = socket.socket(); "
                           f"s.bind(('{self.address}', 0)); print(s.getsockname()[1])"
                           ).stdout)
        self.state = d / "far-state"     # the agent's state file (its /run/fslab)
        (d / "sshd_config").write_text(f"""\
ListenAddress {self.address}:{self.port}
HostKey {d / 'host_key'}
AuthorizedKeysFile {d / 'authorized_keys'}
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
UsePAM no
PidFile {d / 'sshd.pid'}
LogLevel VERBOSE
# the agent's resources are noted here, not in this machine's /run/fslab; and it
# imports the fslab under test (the checkout's, as the coordinator does)
SetEnv FSLAB_STATE_DIR={self.state} PYTHONPATH={REPO}
{self.extra_config}
""")
        key_type, key = (d / "host_key.pub").read_text().split()[:2]
        (d / "known_hosts").write_text(f"[{self.address}]:{self.port} {key_type} {key}\n")
        # the coordinator's view: only this file (-F), the pinned host key, this key
        (d / "ssh_config").write_text(f"""\
Host {self.address}
  Port {self.port}
  IdentityFile {d / 'client_key'}
  IdentitiesOnly yes
  UserKnownHostsFile {d / 'known_hosts'}
  StrictHostKeyChecking yes
""")
        run_sshd = Path("/run/sshd")      # sshd's privilege-separation directory
        if not run_sshd.exists():
            run_sshd.mkdir(mode=0o755)
            self.made_run_sshd = True
        self.log = open(d / "sshd.log", "wb")
        self.proc = subprocess.Popen(["ip", "netns", "exec", self.ns["netns"], SSHD, "-D", "-e",
                                      "-f", str(d / "sshd_config")],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        if not wait_until(lambda: _listening(self.address, self.port) or self.proc.poll(), 10):
            raise AssertionError("sshd does not listen: " + (d / "sshd.log").read_text())
        assert self.proc.poll() is None, (d / "sshd.log").read_text()
        return self

    @property
    def pid(self) -> int:      # ip netns exec execs sshd: the listener's own pid
        return self.proc.pid

    def spec(self, workdir: Path, transport: str = "") -> list[str]:
        """The [[host]] lines of this host in a hosts.toml (transport "": the default,
        ssh, which needs no address; "direct" binds fio's server to the host's address)."""
        lines = ['name = "far"', f'ssh = "root@{self.address}"',
                 f'ssh_options = ["-F", "{self.d / "ssh_config"}"]',
                 f'python = "{sys.executable}"', f'workdir = "{workdir}"']
        if transport:
            lines += [f'transport = "{transport}"', f'address = "{self.address}"']
        return lines

    def mounts(self, needle: str) -> list[str]:
        """Mounts under `needle` in the sshd's (the far side's) mount namespace."""
        return [ln for ln in Path(f"/proc/{self.pid}/mountinfo").read_text().splitlines()
                if needle in ln]

    def sessions(self) -> list[int]:
        return descendants(self.pid)

    def drop_connections(self) -> list[int]:
        """Kill the per-connection sshd processes, as a crashed or killed sshd would
        end them: the agent under them sees its input close."""
        procs = processes()      # one snapshot: the agent starts processes all the time
        victims = [p for p in descendants(self.pid, procs) if procs[p][1].startswith("sshd")]
        for p in victims:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return victims

    def accepted(self) -> int:
        return (self.d / "sshd.log").read_text().count("Accepted publickey for root")

    def stop(self) -> list[str]:
        left = []
        if self.proc is not None:
            procs = processes()
            for p in descendants(self.pid, procs):
                if procs[p][1].startswith("sshd"):
                    try:
                        os.kill(p, signal.SIGTERM)
                    except ProcessLookupError:
                        pass
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.log.close()
            # the sessions got SIGTERM, and were orphaned when the listener exited: wait
            # for them (bounded) instead of looking at once
            wait_until(lambda: not matching(SSHD, str(self.d)), 10)
            left = matching(SSHD, str(self.d))
        if self.made_run_sshd:
            try:
                Path("/run/sshd").rmdir()
            except OSError:
                pass
        return left


def _listening(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    """Two namespace hosts: the first runs the test's sshd (host "far", over SSH),
    the second is a local host (host "near", its fio server inside it)."""
    ensure_iproute2()
    ensure_sshd()
    ns = NamespaceHosts(2)
    far = None
    try:
        ns.create()
        far = SshHost(ns.hosts[0], tmp_path_factory.mktemp("ssh") / "far").start()
        yield ns, far
    finally:
        sshd_left = far.stop() if far is not None else []
        ns_left = ns.remove()
        assert not sshd_left, f"sshd left running: {sshd_left}"
        assert not ns_left, f"namespaces left behind: {ns_left}"


@pytest.fixture(autouse=True)
def own_state(tmp_path, monkeypatch):
    monkeypatch.setenv("FSLAB_STATE_DIR", str(tmp_path / "state"))


def write_files(tmp_path: Path, ns: NamespaceHosts, far: SshHost, mode: str,
                iterations: int = 2, workloads=("randread", "seqwrite"),
                transport: str = "") -> dict:
    near = ns.hosts[1]
    w = {"far": tmp_path / "far-work", "near": tmp_path / "near-work"}
    plan = PLAN.format(iterations=iterations, workloads=orjson.dumps(list(workloads)).decode())
    (tmp_path / "plan.toml").write_text(plan)
    lines = [f'mode = "{mode}"', "port = 8765", "", "[[host]]", *far.spec(w["far"], transport),
             "", "[[host]]", 'name = "near"', f'address = "{near["address"]}"',
             f'netns = "{near["netns"]}"', f'workdir = "{w["near"]}"']
    (tmp_path / "hosts.toml").write_text("\n".join(lines) + "\n")
    return w


def fslab_run_argv(tmp_path: Path) -> list[str]:
    return [*fslab_cmd(), "run", str(tmp_path / "plan.toml"), "--hosts",
            str(tmp_path / "hosts.toml"), "--results", str(tmp_path / "results")]


def start_run(tmp_path: Path) -> subprocess.Popen:
    """`fslab run` in the background, its output collected for the assertions."""
    return subprocess.Popen(fslab_run_argv(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "COLUMNS": "200"})


def wait_for_far_mount(run: subprocess.Popen, far: "SshHost", workdir: Path) -> None:
    """Until the agent has a filesystem mounted on the far side (the run still going)."""
    assert wait_until(lambda: far.mounts(str(workdir)) or run.poll() is not None, 120)
    assert run.poll() is None, run.stdout.read()


# who can reach fio's server ----------------------------------------------------------
def reachable(address: str, port: int) -> bool:
    """A TCP connection to address:port from the root namespace (only ever to addresses
    of the test's own namespaces)."""
    try:
        with socket.create_connection((address, port), timeout=3):
            return True
    except OSError:
        return False


def tcp_listeners(netns: str | None = None) -> list[tuple[str, str]]:
    """(local address:port, ss's users column) of every listening TCP socket."""
    argv = ["ss", "-Htlnp"]
    if netns:
        argv = ["nsenter", f"--net=/run/netns/{netns}", "--", *argv]
    out = []
    for ln in sh(*argv).stdout.splitlines():
        cols = ln.split()
        out.append((cols[3], " ".join(cols[5:])))
    return out


def fio_server_sockets(netns: str) -> list[Path]:
    """The Unix sockets of the fio servers running in namespace `netns` (a server's
    forked children name the same one)."""
    return sorted({Path(word[len("--server=sock:"):]) for line in matching("fio", "--server=sock:",
                                                                     netns=netns)
            for word in line.split() if word.startswith("--server=sock:")})


def connect_as_nobody(path: Path) -> subprocess.CompletedProcess:
    """A connect() to the Unix socket `path` by the unprivileged user nobody."""
    code = ("import socket, sys\n"
            "s = socket.socket(socket.AF_UNIX)\n"
            "try:\n    s.connect(sys.argv[1])\n"
            "except OSError as e:\n    print(e.errno); sys.exit(3)\n"
            "print('connected')\n")
    return subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                           "--", "/usr/bin/python3", "-c", code, str(path)],
                          capture_output=True, text=True, timeout=30)


def store_of(tmp_path: Path):
    from fslab.store import Store
    return Store(tmp_path / "results")


def far_side_clean(far: SshHost, workdir: Path, sessions: bool = True) -> list[str]:
    """What the agent would have left on the far host (empty: nothing)."""
    left = [f"mount {m}" for m in far.mounts(str(workdir))]
    left += [f"loop {ln}" for ln in sh("losetup", "-a").stdout.splitlines() if str(workdir) in ln]
    left += [f"agent {p}" for p in matching("fslab.remote.agent", str(workdir))]
    # on its address (transport direct) or its loopback (ssh): any fio server in there
    left += [f"fio server {p}" for p in matching("fio", "--server=", netns=far.ns["netns"])]
    if sessions:
        left += [f"sshd session {p}" for p in far.sessions()]
    if workdir.exists():
        left.append(f"workdir {workdir}: {sorted(p.name for p in workdir.iterdir())}")
    if (far.state / "resources.json").exists():
        noted = orjson.loads((far.state / "resources.json").read_bytes())
        left += [f"agent's state {e['kind']} {e['id']}" for e in noted]
    return left


def far_side_left(far: SshHost, workdir: Path) -> list[str]:
    """far_side_clean once the ended run's sshd session has had time to exit: the
    client's exit does not wait for the server's session process, so a look at once
    can still find it. Anything else still there after 10 s is a leftover."""
    wait_until(lambda: far_side_clean(far, workdir) == [], 10)
    return far_side_clean(far, workdir)


def near_side_clean(ns: NamespaceHosts, workdir: Path, tmp_path: Path) -> list[str]:
    left = [ln for ln in Path("/proc/self/mountinfo").read_text().splitlines()
            if str(workdir) in ln]
    left += [ln for ln in sh("losetup", "-a").stdout.splitlines() if str(workdir) in ln]
    left += [f"fio server {p}" for p in matching("fio", f"--server=ip:{ns.hosts[1]['address']},")]
    noted = orjson.loads((tmp_path / "state" / "resources.json").read_bytes())
    left += [f"state {e['kind']} {e['id']}" for e in noted]
    return left


def test_ssh_host_runs_the_plan_beside_a_local_host(net, tmp_path):
    ns, far = net
    w = write_files(tmp_path, ns, far, "parallel")
    before = far.accepted()
    run = start_run(tmp_path)
    try:
        # during the run: fio's server listens on a Unix socket of the far host in a
        # directory only root (the SSH user) enters, nothing of it on TCP, and fio's
        # connection goes through a Unix socket of the run's ssh, only root's
        wait_for_far_mount(run, far, w["far"])
        far_fio = [a for a, users in tcp_listeners(far.ns["netns"]) if '"fio"' in users]
        far_socks = fio_server_sockets(far.ns["netns"])
        far_dir = far_socks[0].parent if far_socks else None
        far_dir_stat = far_dir.stat() if far_dir else None
        as_nobody = connect_as_nobody(far_socks[0]) if far_socks else None
        as_root = socket.socket(socket.AF_UNIX)      # the same connect as root does reach it
        as_root.connect(str(far_socks[0]))
        as_root.close()
        here = {p for p in descendants(run.pid)}
        forwards = [cmd for p, (_, cmd) in processes().items()
                    if p in here and cmd.startswith("ssh ") and " -L " in cmd]
        # the root namespace routes to far's address (the namespaces only to it): the
        # coordinator's view is the one a neighbour on the network would have
        exposed = reachable(far.address, 8765)
        listening_here = [(a, users) for a, users in tcp_listeners()
                          if any(f"pid={p}," in users for p in here)]
        sock = Path(forwards[0].split(" -L ")[1].split(":")[0]) if forwards else None
        modes = (oct(sock.stat().st_mode & 0o777), oct(sock.parent.stat().st_mode & 0o777)) \
            if sock else None
        out, _ = run.communicate(timeout=600)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 0, out
    assert far_fio == [], far_fio
    assert len(far_socks) == 1, far_socks
    assert oct(far_dir_stat.st_mode & 0o777) == "0o700" and far_dir_stat.st_uid == 0
    # a local user of the far host cannot reach fio's server: the directory stops it
    assert as_nobody.returncode == 3 and as_nobody.stdout.strip() == str(errno.EACCES), \
        (as_nobody.stdout, as_nobody.stderr)
    assert not far_dir.exists(), f"{far_dir} stayed on the far host"
    assert not exposed, f"{far.address}:8765 answers from another namespace"
    assert listening_here == [], listening_here
    assert len(forwards) == 1, forwards
    assert f" -L {forwards[0].split(' -L ')[1].split(':')[0]}:{far_socks[0]} " in forwards[0]
    assert modes == ("0o600", "0o700"), modes     # the socket, its directory: root's only
    assert not sock.parent.exists(), "the forward's socket stayed"
    assert far.accepted() == before + 1, "fslab did not log in to the test's sshd once"
    store = store_of(tmp_path)
    run_id = store.latest_run_id()
    units = store.units(run_id)
    # 2 cases x 2 iterations on far, near and their sum
    assert len(units) == 12 and {u["status"] for u in units} == {"done"}, units
    df = store.records(run_id)
    assert set(df["host"]) == {"far", "near", "all"}
    for host in ("far", "near"):
        iops = df[(df["host"] == host) & (df["metric"] == "read_iops")]["value"]
        assert len(iops) == 2 and (iops > 0).all()
    # what the agent captured on the far side, stored with the run
    hosts_env = store.run(run_id)["environment"]["multihost"]["hosts"]
    env = hosts_env["far"]["environment"]
    assert env["kernel"] == os.uname().release and env["root"] is True
    assert env["tools"]["fio"].startswith("fio-")
    assert env["target"]["workdir"] == str(w["far"])
    assert env["fio_server"] == {"address": f"sock:{far_socks[0]}", "started_by_fslab": True,
                                 "transport": "ssh"}
    assert hosts_env["near"]["environment"]["fio_server"]["transport"] == "direct"
    assert "netns" not in env                  # the agent ran it, not a local host
    assert hosts_env["near"]["environment"]["netns"] == ns.hosts[1]["netns"]
    ext4 = hosts_env["far"]["filesystems"]["ext4"]
    assert ext4["in_effect"]["fstype"] == "ext4" and ext4["devices"][0].startswith("/dev/loop")
    assert ext4["target"]["workdir"] == str(w["far"])
    assert "per host" in out and "far" in out and "near" in out
    assert (f"host far: fio server started on {far_socks[0]} of far (a Unix socket only the "
            "SSH user can reach), through the SSH connection (not on the network)") in out
    # nothing left on either side; the sshd has no session any more
    assert far_side_left(far, w["far"]) == []
    assert near_side_clean(ns, w["near"], tmp_path) == []


def test_direct_transport_binds_the_hosts_address_and_says_so(net, tmp_path):
    """transport = "direct": the server listens on the far host's address, reachable
    from another namespace (what the ssh transport avoids), and the run says so."""
    ns, far = net
    w = write_files(tmp_path, ns, far, "each", iterations=3, workloads=("randread",),
                    transport="direct")
    run = start_run(tmp_path)
    try:
        wait_for_far_mount(run, far, w["far"])
        far_fio = [a for a, users in tcp_listeners(far.ns["netns"]) if '"fio"' in users]
        from_root = reachable(far.address, 8765)
        out, _ = run.communicate(timeout=600)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 0, out
    assert far_fio == [f"{far.address}:8765"] and from_root, (far_fio, from_root)
    store = store_of(tmp_path)
    run_id = store.latest_run_id()
    assert {u["status"] for u in store.units(run_id)} == {"done"}
    env = store.run(run_id)["environment"]["multihost"]["hosts"]["far"]["environment"]
    assert env["fio_server"] == {"address": f"ip:{far.address},8765", "started_by_fslab": True,
                                 "transport": "direct"}
    assert (f"host far: fio server started at {far.address}:8765 (transport direct: no "
            "authentication, open to whoever reaches that address)") in out
    assert far_side_left(far, w["far"]) == []
    assert near_side_clean(ns, w["near"], tmp_path) == []


def test_sshd_that_refuses_forwarding_fails_that_host_with_the_way_out(net, tmp_path):
    """An sshd with AllowStreamLocalForwarding no cannot carry fio's connection to its
    Unix socket: that host fails up front, saying why and what to do; the agent stops
    the server it started and removes its socket's directory."""
    ns, far = net
    strict = SshHost(far.ns, tmp_path / "strict-sshd", "AllowStreamLocalForwarding no").start()
    try:
        w = write_files(tmp_path, ns, strict, "each", iterations=1, workloads=("randread",))
        p = subprocess.run(fslab_run_argv(tmp_path), capture_output=True, text=True,
                           timeout=600, env={**os.environ, "COLUMNS": "200"})
        far_left = far_side_left(strict, w["far"])
    finally:
        sshd_left = strict.stop()
    assert sshd_left == [], sshd_left
    assert p.returncode == 0, p.stdout + p.stderr
    store = store_of(tmp_path)
    run_id = store.latest_run_id()
    units = {u["host"]: u for u in store.units(run_id)}
    assert units["near"]["status"] == "done" and units["far"]["status"] == "failed"
    msg = units["far"]["message"]
    assert "does not carry fio's connection to /tmp/fslab-fio-" in msg, msg
    assert "open failed" in msg and "AllowStreamLocalForwarding" in msg, msg
    remote_dir = Path(msg.split("connection to ")[1].split()[0]).parent
    assert not remote_dir.exists(), f"{remote_dir} stayed on the far host"
    assert 'transport = "direct"' in msg, msg
    assert far_left == []
    assert near_side_clean(ns, w["near"], tmp_path) == []


def test_dropped_connection_fails_that_host_only_and_the_agent_tears_down(net, tmp_path):
    ns, far = net
    w = write_files(tmp_path, ns, far, "each", iterations=4, workloads=("randread",))
    run = start_run(tmp_path)
    try:
        # the agent has a filesystem mounted on the far side: cut the connection now
        wait_for_far_mount(run, far, w["far"])
        agents = matching("fslab.remote.agent", str(w["far"]))
        assert len(agents) >= 2, agents       # the ssh client here, the agent there
        socks = fio_server_sockets(far.ns["netns"])
        assert len(socks) == 1 and socks[0].exists(), socks
        cut = time.time()
        assert far.drop_connections()
        # the agent sees its input close and tears down at once (well before the
        # 60 s after which missing pings would make it give up)
        left = wait_until(lambda: far_side_clean(far, w["far"]) == [], 20)
        assert left, far_side_clean(far, w["far"])
        out, _ = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 0, out
    store = store_of(tmp_path)
    run_id = store.latest_run_id()
    assert store.run(run_id)["status"] == "finished-with-failures"
    units = store.units(run_id)
    near = [u for u in units if u["host"] == "near"]
    far_units = [u for u in units if u["host"] == "far"]
    assert len(near) == 4 and {u["status"] for u in near} == {"done"}
    assert len(far_units) == 4
    for u in far_units:   # done before the cut, failed from the cut on
        assert u["status"] == ("done" if u["finished"] < cut else "failed"), (u, cut)
    failed = [u for u in far_units if u["status"] == "failed"]
    assert failed and all("far" in u["message"] for u in failed), [u["message"] for u in failed]
    assert any("connection to the agent lost" in u["message"] for u in failed), failed
    df = store.records(run_id)
    # the near host carried on; a failed unit stores no values
    assert len(df[(df["host"] == "near") & (df["metric"] == "read_iops")]) == 4
    assert len(df[(df["host"] == "far") & (df["metric"] == "read_iops")]) == 4 - len(failed)
    assert f"{len(failed)} failed" in out
    assert far_side_left(far, w["far"]) == []
    assert not socks[0].parent.exists(), "the agent left fio's socket directory"
    assert near_side_clean(ns, w["near"], tmp_path) == []


@pytest.mark.slow
def test_unreachable_host_is_given_up_on_both_sides(net, tmp_path):
    """The network to the far host fails silently (its link goes down): ssh's keepalives
    tell this side within seconds, fio's client (which would wait as long as TCP does)
    is stopped, and the agent, hearing no pings, tears down on its own."""
    ns, far = net
    w = write_files(tmp_path, ns, far, "each", iterations=3, workloads=("randread",))
    hosts = (tmp_path / "hosts.toml").read_text().replace(   # the host's options come first
        '"-F", ', '"-o", "ServerAliveInterval=2", "-o", "ServerAliveCountMax=2", "-F", ')
    (tmp_path / "hosts.toml").write_text(hosts)
    veth = ns.hosts[0]["veth"]
    run = start_run(tmp_path)
    try:
        wait_for_far_mount(run, far, w["far"])
        sh("ip", "link", "set", veth, "down")
        cut = time.monotonic()
        out, _ = run.communicate(timeout=300)
        coordinator_done = time.monotonic() - cut
        # the far side is alone now: the agent gives up 60 s after the last ping (its
        # sshd session stays: it cannot tell the client that the command ended)
        assert wait_until(lambda: far_side_clean(far, w["far"], sessions=False) == [], 120), \
            far_side_clean(far, w["far"], sessions=False)
        far_done = time.monotonic() - cut
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        sh("ip", "link", "set", veth, "up")
        for p in far.drop_connections():     # the stranded session, if TCP keeps it
            print(f"ended stranded sshd session {p}")
    assert run.returncode == 0, out
    assert coordinator_done < 60, f"the coordinator waited {coordinator_done:.0f}s for a lost host"
    assert far_done < 100, far_done
    store = store_of(tmp_path)
    run_id = store.latest_run_id()
    units = store.units(run_id)
    assert {u["status"] for u in units if u["host"] == "near"} == {"done"}
    failed = [u for u in units if u["host"] == "far" and u["status"] == "failed"]
    assert failed and any("far lost" in u["message"] or "connection to the agent lost"
                          in u["message"] for u in failed), failed
    assert near_side_clean(ns, w["near"], tmp_path) == []


def test_fio_server_refuses_a_socket_directory_that_exists(tmp_path):
    """The socket's directory must be the agent's own: one already there (another user
    could have made it, and could enter it) is refused, left as it was, and no server
    starts; a fresh one is 0700 while the server runs and gone after."""
    from fslab.remote.server import FioServer
    planted = tmp_path / "planted"
    planted.mkdir(mode=0o777)
    server = FioServer(f"sock:{planted}/fio.sock", "", 0)
    from fslab.errors import StepFailed
    with pytest.raises(StepFailed, match="File exists .one already there is never used"):
        server.ensure("auto", tmp_path / "log" / "planted.log")
    assert server.proc is None and sorted(planted.iterdir()) == []
    # in /tmp (1777) itself: nobody could reach it but for its own mode
    fresh = Path(f"/tmp/fslab-test-fio-{os.getpid()}-{time.monotonic_ns()}")
    server = FioServer(f"sock:{fresh}/fio.sock", "", 0)
    try:
        assert server.ensure("auto", tmp_path / "log" / "fresh.log") is True
        assert oct(fresh.stat().st_mode & 0o777) == "0o700"
        assert connect_as_nobody(fresh / "fio.sock").stdout.strip() == str(errno.EACCES)
    finally:
        server.stop()
    assert not fresh.exists()
    noted = orjson.loads((tmp_path / "state" / "resources.json").read_bytes())
    assert noted == [], noted


def test_ssh_forward_goes_to_a_fresh_socket_or_to_a_reused_servers_port():
    from fslab.remote.ssh import SocketForward
    own, other, reused = SocketForward(), SocketForward(), SocketForward(8765)
    try:
        assert own.remote_socket.startswith("/tmp/fslab-fio-") and \
            own.remote_socket != other.remote_socket
        assert own.fio_address == f"sock:{own.remote_socket}"
        assert own.ssh_options()[-2:] == ["-L", f"{own.socket}:{own.remote_socket}"]
        assert reused.fio_address == "ip:127.0.0.1,8765"
        assert reused.ssh_options()[-2:] == ["-L", f"{reused.socket}:127.0.0.1:8765"]
    finally:
        for f in (own, other, reused):
            f.close()


def test_cleanup_after_a_crash_stops_the_server_and_removes_its_socket_directory(tmp_path):
    """What a killed agent leaves (the server, its socket's directory) is noted, so
    `fslab cleanup` on that host removes both."""
    from fslab.remote.server import FioServer, group_members
    from fslab.system import teardown
    d = Path(f"/tmp/fslab-test-fio-{os.getpid()}-{time.monotonic_ns()}")
    server = FioServer(f"sock:{d}/fio.sock", "", 0)
    try:
        server.ensure("auto", tmp_path / "log" / "server.log")
        pgid = server.proc.pid
        done, failed = teardown.cleanup(owner=os.getpid())    # as if the agent had died
        assert failed == [] and len(done) == 2, (done, failed)
        assert not d.exists() and group_members(pgid) == []
    finally:
        if server.proc is not None and server.proc.poll() is None:
            server.stop()
        shutil.rmtree(d, ignore_errors=True)
