"""fslab across hosts, for real: network namespaces as hosts, fio --server in each.

Each test host is a namespace joined to the root namespace by a veth pair on its own
private /24 (10.213.N.0/24, used only between the two ends). Traffic goes only to
those namespace addresses. Filesystems are real loop-backed ext4 made by the
coordinator (a local host's preparation runs in this process); fio's servers run
inside the namespaces. Everything is torn down, also when a test fails.
"""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import orjson
import pytest
from conftest import leftovers

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces, loop devices, mounts)"),
    pytest.mark.skipif(not shutil.which("fio"), reason="fio is not installed"),
]

SUBNET = "10.213"       # 10.213.<N>.0/24: one private /24 per test host
FIO_PORT = 8765


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=check, capture_output=True, text=True)


def wait_until(check, timeout: float, step: float = 0.1):
    """check()'s first true value within `timeout` seconds, else its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(step)
    return check()


def group_members(pgid: int) -> list[int]:
    """Live processes (not zombies) of process group `pgid`."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            fields = Path(f"/proc/{d}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(d))
    return out


def kill_group_and_wait(proc: subprocess.Popen, timeout: float = 10.0) -> list[int]:
    """SIGKILL the process group a test started (with start_new_session) and wait, up to
    `timeout`, until none of it is left; the pids still there then. fio's server forks a
    child per client connection: the leader's death neither takes it along nor waits
    for it, so a check right after `proc.wait()` can still find it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=timeout)
    wait_until(lambda: not group_members(proc.pid), timeout)
    return group_members(proc.pid)


def netns_pids(netns: str) -> list[str]:
    return sh("ip", "netns", "pids", netns, check=False).stdout.split()


def ensure_iproute2() -> None:
    if not shutil.which("ip"):
        subprocess.run(["apt-get", "install", "-y", "iproute2"], check=True, capture_output=True)


class NamespaceHosts:
    """N namespaces, each with a veth to the root namespace; remove() undoes all of it."""

    def __init__(self, n: int):
        tag = uuid.uuid4().hex[:4]
        self.n = n
        self.hosts = [{"name": f"h{i + 1}", "netns": f"fslab-t{tag}-{i + 1}",
                       "veth": f"fsl{tag}{i + 1}", "peer": f"fsl{tag}{i + 1}p"} for i in range(n)]

    def _free_subnets(self) -> list[int]:
        """N /24s under SUBNET that no interface of this machine uses: the test's parallel
        workers and other test runs each make their own hosts at the same time."""
        addresses = sh("ip", "-4", "-o", "addr").stdout
        used = {int(x) for x in re.findall(rf"\b{re.escape(SUBNET)}\.(\d+)\.", addresses)}
        free = [x for x in range(1, 255) if x not in used]
        return free[:self.n]

    def create(self) -> "NamespaceHosts":
        # choosing subnets and taking them is one step for every test run on this machine
        with open("/run/lock/fslab-test-netns.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            for h, x in zip(self.hosts, self._free_subnets()):
                h["address"], h["root"] = f"{SUBNET}.{x}.2", f"{SUBNET}.{x}.1"
                self._add(h)
        return self

    def _add(self, h: dict) -> None:
        sh("ip", "netns", "add", h["netns"])
        sh("ip", "link", "add", h["veth"], "type", "veth", "peer", "name", h["peer"],
           "netns", h["netns"])
        sh("ip", "addr", "add", f"{h['root']}/24", "dev", h["veth"])
        sh("ip", "link", "set", h["veth"], "up")
        sh("ip", "-n", h["netns"], "addr", "add", f"{h['address']}/24", "dev", h["peer"])
        sh("ip", "-n", h["netns"], "link", "set", h["peer"], "up")
        sh("ip", "-n", h["netns"], "link", "set", "lo", "up")

    def remove(self) -> list[str]:
        left = []
        for h in self.hosts:
            # a process still inside would keep the namespace's network alive: stop it,
            # and wait until it is gone (SIGKILL is delivered, not waited for)
            for pid in netns_pids(h["netns"]):
                sh("kill", "-9", pid, check=False)
            if not wait_until(lambda: not netns_pids(h["netns"]), 10):
                left.append(f"{h['netns']} (pids {' '.join(netns_pids(h['netns']))})")
            sh("ip", "link", "del", h["veth"], check=False)
            sh("ip", "netns", "del", h["netns"], check=False)
            if h["netns"] in sh("ip", "netns", "list").stdout:
                left.append(h["netns"])
        return left

    def toml(self, mode: str, workdir: Path, server: dict[str, str] | None = None,
             names: tuple[str, ...] | None = None) -> str:
        """A hosts.toml with every host (or those `names`)."""
        lines = [f'mode = "{mode}"', f"port = {FIO_PORT}"]
        for h in (h for h in self.hosts if names is None or h["name"] in names):
            lines += ["", "[[host]]", f'name = "{h["name"]}"', f'address = "{h["address"]}"',
                      f'netns = "{h["netns"]}"', f'workdir = "{workdir / h["name"]}"']
            if server and h["name"] in server:
                lines.append(f'server = "{server[h["name"]]}"')
        return "\n".join(lines) + "\n"


PLAN = """
[run]
profile = "smoke"
iterations = 2
seed = 7

[[filesystem]]
name = "ext4"

[[suite]]
kind = "fio"
workloads = ["randread", "seqwrite"]
[suite.fio]
size = "16M"
runtime = "1"
"""


@pytest.fixture(scope="module")
def hosts():
    ensure_iproute2()
    t = NamespaceHosts(3)
    try:
        yield t.create()
    finally:
        left = t.remove()
        assert not left, f"namespaces left behind: {left}"


@pytest.fixture(autouse=True)
def own_state(tmp_path, monkeypatch):
    monkeypatch.setenv("FSLAB_STATE_DIR", str(tmp_path / "state"))


def run_fslab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fslab", *args], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "COLUMNS": "200"})


def store_of(results: Path):
    from fslab.store import Store
    return Store(results)


def assert_no_leftovers(hosts: NamespaceHosts, workdir: Path, state_dir: Path) -> None:
    for h in hosts.hosts:   # fslab stopped (and waited for) the fio servers it started
        assert netns_pids(h["netns"]) == [], h["netns"]
    mounts = Path("/proc/self/mounts").read_text()
    assert str(workdir) not in mounts
    assert str(workdir) not in sh("losetup", "-a").stdout
    assert orjson.loads((state_dir / "resources.json").read_bytes()) == []
    assert not any(workdir.rglob("*")), list(workdir.rglob("*"))


def one_run(hosts: NamespaceHosts, tmp_path: Path, mode: str, server=None, resume: str | None = None):
    workdir, results = tmp_path / "hostwork", tmp_path / "results"
    workdir.mkdir(exist_ok=True)
    (tmp_path / "plan.toml").write_text(PLAN)
    (tmp_path / "hosts.toml").write_text(hosts.toml(mode, workdir, server))
    args = ["run", str(tmp_path / "plan.toml"), "--hosts", str(tmp_path / "hosts.toml"),
            "--results", str(results)]
    p = run_fslab(*args, *(["--resume", resume] if resume else []))
    return p, store_of(results), workdir


def per_host_values(store, run_id: str, metric: str):
    df = store.records(run_id)
    return df[df["metric"] == metric].groupby(["host", "case"])["value"].apply(list).to_dict()


def test_parallel_mode_records_every_host_and_the_sum(hosts, tmp_path):
    p, store, workdir = one_run(hosts, tmp_path, "parallel")
    assert p.returncode == 0, p.stdout + p.stderr
    run_id = store.latest_run_id()
    units = store.units(run_id)
    # 2 cases x 2 iterations, on h1 h2 h3 plus the aggregate
    assert len(units) == 16 and {u["status"] for u in units} == {"done"}
    assert {u["host"] for u in units} == {"h1", "h2", "h3", "all"}
    df = store.records(run_id)
    iops = df[(df["metric"] == "read_iops") & (df["case"] == "randread")]
    for it in (1, 2):
        rows = iops[iops["iteration"] == it].set_index("host")["value"]
        assert set(rows.index) == {"h1", "h2", "h3", "all"}
        assert (rows[["h1", "h2", "h3"]] > 0).all()
        # fio's "All clients" is the sum of the hosts measured side by side
        assert rows["all"] == pytest.approx(rows[["h1", "h2", "h3"]].sum(), rel=0.02)
    # every host unit keeps the one raw client-mode JSON, and it names all three servers
    raw = orjson.loads(store.root.joinpath(df[df["host"] == "h2"]["artifact"].iloc[0])
                       .read_text()[store.root.joinpath(df[df["host"] == "h2"]["artifact"]
                                                        .iloc[0]).read_text().index("{\n"):])
    assert {e["hostname"] for e in raw["client_stats"]} == {h["address"] for h in hosts.hosts}
    assert "hosts compared" in p.stdout and "h2 vs h1 on ext4" in p.stdout
    # the report compares hosts; the sum is never ranked against one host
    rep = run_fslab("report", run_id, "--results", str(store.root), "--factor", "host")
    assert rep.returncode == 0, rep.stderr
    header = next(ln for ln in rep.stdout.splitlines() if "metric" in ln)
    assert " h1 " in header and " h3 " in header and " all " not in header
    rep = run_fslab("report", run_id, "--results", str(store.root))
    assert "h3 vs h1 on ext4, fio:randread read_iops" in rep.stdout
    assert_no_leftovers(hosts, workdir, tmp_path / "state")


def test_each_mode_runs_hosts_one_at_a_time(hosts, tmp_path):
    p, store, workdir = one_run(hosts, tmp_path, "each")
    assert p.returncode == 0, p.stdout + p.stderr
    run_id = store.latest_run_id()
    units = store.units(run_id)
    assert len(units) == 12 and {u["host"] for u in units} == {"h1", "h2", "h3"}
    spans = sorted((u["started"], u["finished"]) for u in units)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), "units overlapped"
    df = store.records(run_id)
    for u in units:   # each unit's raw JSON has exactly its own host
        art = store.root / u["artifact_dir"] / "fio.json"
        text = art.read_text()
        doc = orjson.loads(text[text.index("{\n"):])
        h = next(x for x in hosts.hosts if x["name"] == u["host"])
        assert [e["hostname"] for e in doc["client_stats"]] == [h["address"]]
    fs_env = store.run(run_id)["environment"]["multihost"]["hosts"]["h3"]
    assert fs_env["environment"]["fio_server"]["started_by_fslab"] is True
    assert fs_env["filesystems"]["ext4"]["in_effect"]["fstype"] == "ext4"
    assert (df["value"][df["metric"] == "write_bw"] > 0).all()
    assert_no_leftovers(hosts, workdir, tmp_path / "state")


def test_failed_host_is_recorded_and_resume_retries_only_it(hosts, tmp_path):
    # h3 expects a server that is not there: its units fail, h1 and h2 carry on
    p, store, workdir = one_run(hosts, tmp_path, "each", server={"h3": "reuse"})
    assert p.returncode == 0, p.stdout + p.stderr
    run_id = store.latest_run_id()
    assert store.run(run_id)["status"] == "finished-with-failures"
    units = {(u["host"], u["case"], u["iteration"]): u for u in store.units(run_id)}
    failed = {k for k, u in units.items() if u["status"] == "failed"}
    assert failed == {("h3", c, i) for c in ("randread", "seqwrite") for i in (1, 2)}
    assert "no fio server listens at" in units[("h3", "randread", 1)]["message"]
    assert set(store.records(run_id)["host"]) == {"h1", "h2"}
    # someone starts h3's server (as a systemd unit would); resume redoes h3 only
    h3 = hosts.hosts[2]
    # in a session of its own: its connection children are stopped with it, as a group
    server = subprocess.Popen(["nsenter", f"--net=/run/netns/{h3['netns']}", "--", "fio",
                               f"--server=ip:{h3['address']},{FIO_PORT}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        from fslab.remote.server import listening
        assert wait_until(lambda: listening(h3["address"], FIO_PORT), 10)
        p2, store, _ = one_run(hosts, tmp_path, "each", server={"h3": "reuse"}, resume=run_id)
        assert p2.returncode == 0, p2.stdout + p2.stderr
        assert server.poll() is None, "fslab stopped a server it did not start"
    finally:
        left = kill_group_and_wait(server)
    assert left == [], f"the test's fio server group still has {left}"
    after = {(u["host"], u["case"], u["iteration"]): u for u in store.units(run_id)}
    assert {u["status"] for u in after.values()} == {"done"}
    for k, u in units.items():    # what was done before was not run again
        if k[0] != "h3":
            assert after[k]["finished"] == u["finished"]
    assert store.run(run_id)["status"] == "finished"
    assert set(store.records(run_id)["host"]) == {"h1", "h2", "h3"}
    assert_no_leftovers(hosts, workdir, tmp_path / "state")


def test_compare_runs_of_one_plan_on_two_hosts(hosts, tmp_path):
    """The same plan run on h1, then on h2 (a hosts file each): compare sets the hosts
    side by side, case by case."""
    workdir, results = tmp_path / "hostwork", tmp_path / "results"
    workdir.mkdir()
    (tmp_path / "plan.toml").write_text(PLAN)
    runs = []
    for name in ("h1", "h2"):
        (tmp_path / f"{name}.toml").write_text(hosts.toml("each", workdir, names=(name,)))
        p = run_fslab("run", str(tmp_path / "plan.toml"), "--hosts", str(tmp_path / f"{name}.toml"),
                      "--results", str(results))
        assert p.returncode == 0, p.stdout + p.stderr
        runs.append(store_of(results).latest_run_id())
    c = run_fslab("compare", *runs, "--results", str(results))
    assert c.returncode == 0, c.stdout + c.stderr
    assert f"h2 ({runs[1]}) vs h1 ({runs[0]})" in c.stdout
    header = next(ln for ln in c.stdout.splitlines() if "metric" in ln)
    assert " h1 " in header and " h2 " in header
    rows = [ln for ln in c.stdout.splitlines() if "ext4 fio:randread" in ln or
            "ext4 fio:seqwrite" in ln]
    assert len(rows) == 2, c.stdout
    j = run_fslab("compare", *runs, "--results", str(results), "--json")
    pairs = orjson.loads(j.stdout)["rows"]
    assert {(r["baseline"], r["other"]) for r in pairs} == {("h1", "h2")}
    assert {r["case"] for r in pairs} == {"randread", "seqwrite"}
    assert_no_leftovers(hosts, workdir, tmp_path / "state")


@pytest.mark.slow
@pytest.mark.serial   # asks whether the one zfs-fuse daemon runs, before and after
def test_s2_study_plan_at_smoke_across_two_hosts_in_parallel(hosts, tmp_path):
    """Issue 8's "done when": plans/s2-fio-stats.toml --profile smoke across namespace
    hosts (btrfs, ext4, xfs, zfs; zfs-fuse started on demand, stopped after)."""
    from fslab.filesystems import zfs
    fuse_before = zfs.fuse_daemon_pid()
    workdir, results = tmp_path / "hostwork", tmp_path / "results"
    workdir.mkdir()
    (tmp_path / "hosts.toml").write_text(hosts.toml("parallel", workdir, names=("h1", "h2")))
    plan = Path(__file__).resolve().parents[1] / "plans" / "s2-fio-stats.toml"
    p = run_fslab("run", str(plan), "--hosts", str(tmp_path / "hosts.toml"), "--profile", "smoke",
                  "--results", str(results))
    assert p.returncode == 0, p.stdout + p.stderr
    store = store_of(results)
    run_id = store.latest_run_id()
    units = store.units(run_id)
    fses, cases = {"btrfs", "ext4", "xfs", "zfs"}, {"randread", "randwrite", "seqread",
                                                    "seqwrite", "mixed"}
    # 4 fs x 5 cases x 2 iterations, on h1 and h2 and their sum
    assert len(units) == 4 * 5 * 2 * 3, len(units)
    assert [u for u in units if u["status"] != "done"] == []
    df = store.records(run_id)
    for host in ("h1", "h2", "all"):
        mine = df[df["host"] == host]
        assert {(f, c) for f, c in zip(mine["fs"], mine["case"])} == \
            {(f, c) for f in fses for c in cases}, host
    iops = df[(df["metric"] == "read_iops") & (df["case"] == "randread")]
    for (fs, it), g in iops.groupby(["fs", "iteration"]):
        v = g.set_index("host")["value"]
        # fio's own "All clients" aggregate, not our sum: the two differ by how far the
        # hosts' runtimes differ (2.2% seen when both share a loaded 2-core machine)
        assert v["all"] == pytest.approx(v["h1"] + v["h2"], rel=0.05), (fs, it)
    zfs_env = store.run(run_id)["environment"]["multihost"]["hosts"]["h2"]["filesystems"]["zfs"]
    assert zfs_env["in_effect"]
    rep = run_fslab("report", run_id, "--results", str(results))
    assert rep.returncode == 0, rep.stderr
    assert "hosts compared" in rep.stdout
    for fs in sorted(fses):
        assert f"h2 vs h1 on {fs}, fio:randread read_iops" in rep.stdout
    assert "h1 fio:randread" in rep.stdout and "h2 fio:randread" in rep.stdout
    assert_no_leftovers(hosts, workdir, tmp_path / "state")
    assert leftovers(str(workdir)) == []          # mounts, loops, zpools over its images
    assert zfs.fuse_daemon_pid() == fuse_before, "zfs-fuse left running (or stopped)"


def test_hosts_file_errors_name_file_line_and_field(tmp_path):
    from fslab.errors import FslabError
    from fslab.remote import hosts as hostfile
    text = ('mode = "parallel"\n\n[[host]]\nname = "a"\naddress = "10.213.1.2"\n\n'
            '[[host]]\nname = "b"\naddress = "10.213.1.2"\nport = 70000\n')
    (tmp_path / "hosts.toml").write_text(text)
    with pytest.raises(FslabError, match=r"hosts.toml:10: host\.1\.port: .*65535"):
        hostfile.load(tmp_path / "hosts.toml")
    with pytest.raises(FslabError, match=r"port 8765 is given to two hosts"):
        hostfile.parse(text.replace("port = 70000\n", ""), "h.toml")
    with pytest.raises(FslabError, match=r"netns is only for local hosts"):
        hostfile.parse('[[host]]\nname = "a"\naddress = "x"\nssh = "me@a"\nnetns = "n"\n', "h")
    plan_text = '[hosts]\nmode = "each"\n[[hosts.host]]\nname = "all"\naddress = "10.213.1.2"\n'
    import tomllib
    with pytest.raises(FslabError, match=r"p.toml:4: hosts\.host\.0\.name: 'all' is reserved"):
        hostfile.from_plan(tomllib.loads(plan_text)["hosts"], plan_text, "p.toml")
    six = hostfile.parse('[[host]]\nname = "v6"\naddress = "fd00::2"\nport = 9000\n', "h")
    assert six.host[0].fio_address == "ip6:fd00::2,9000"
    # transport: an SSH host's server listens on its loopback unless "direct" is asked
    # for (then it needs an address); a local host has no SSH connection to carry fio's
    two = hostfile.parse('[[host]]\nname = "a"\nssh = "me@a"\n\n[[host]]\nname = "b"\n'
                         'ssh = "me@b"\ntransport = "direct"\naddress = "10.0.0.2"\n', "h")
    assert [(h.transport, h.fio_address) for h in two.host] == \
        [("ssh", "ip:127.0.0.1,8765"), ("direct", "ip:10.0.0.2,8765")]
    with pytest.raises(FslabError, match=r'address is required with transport = "direct"'):
        hostfile.parse('[[host]]\nname = "a"\nssh = "me@a"\ntransport = "direct"\n', "h")
    with pytest.raises(FslabError, match=r'transport = "ssh" needs an SSH destination'):
        hostfile.parse('[[host]]\nname = "a"\naddress = "x"\ntransport = "ssh"\n', "h")
    assert hostfile.parse('[[host]]\nname = "a"\naddress = "x"\n', "h").host[0].transport \
        == "direct"
