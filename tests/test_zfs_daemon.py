"""zfs-fuse's daemon: started when needed, replaced when it hangs, stopped only if fslab started it."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from conftest import fslab_cmd, leftovers, needs_root
from fslab.system.proc import which

# they freeze, kill and replace the one zfs-fuse daemon every zfs run on this machine uses
pytestmark = [needs_root(), pytest.mark.serial,
              pytest.mark.skipif(not which("zfs-fuse"), reason="zfs-fuse not installed")]


def _daemon_to_ourselves(wait_s: float = 180) -> None:
    """A test that freezes, kills or stops the one daemon needs it to itself: wait while
    another process runs or uses zfs-fuse, skip if it still does after wait_s."""
    from fslab.filesystems import zfs
    from fslab.filesystems.zfs_fuse_daemon import other_users
    if zfs.kernel_zfs():
        pytest.skip("kernel OpenZFS in use: no fuse daemon")
    deadline = time.monotonic() + wait_s
    while zfs.fuse_daemon_pid() or other_users():
        if time.monotonic() > deadline:
            pytest.skip("another process keeps using the zfs-fuse daemon")
        time.sleep(2)


def _freeze(pid: int | None) -> None:
    """SIGSTOP our daemon; another fslab process may have replaced it meanwhile (it found
    it hung under load): then this test cannot tell what it tests, and skips."""
    try:
        os.kill(pid, signal.SIGSTOP)
    except (ProcessLookupError, TypeError):
        pytest.skip("another fslab process replaced the zfs-fuse daemon during the test")


def test_a_hung_daemon_that_fslab_started_is_replaced(state_dir):
    from fslab.filesystems import zfs
    _daemon_to_ourselves()
    assert zfs.ensure_fuse_daemon() is True
    first = zfs.fuse_daemon_pid()
    try:
        os.kill(first, signal.SIGSTOP)   # a deadlocked daemon: alive, answers nothing
        t = time.monotonic()
        assert zfs.ensure_fuse_daemon() is True
        assert time.monotonic() - t < 60
        second = zfs.fuse_daemon_pid()
        assert second and second != first and zfs.responsive()
        assert not Path(f"/proc/{first}").exists() or \
            Path(f"/proc/{first}/stat").read_text().split()[2] == "Z"
    finally:
        for pid in {first, zfs.fuse_daemon_pid()}:
            if pid:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
        zfs.stop_fuse_daemon_if_ours()
    assert zfs.fuse_daemon_pid() is None


def test_the_last_fslab_run_to_end_stops_a_daemon_another_run_started(tmp_path, monkeypatch):
    """Run A starts zfs-fuse and ends while run B still has a pool: the daemon stays (B
    needs it). When B ends, B stops it although B did not start it: no idle daemon is left."""
    from fslab.filesystems import zfs
    from fslab.system.proc import run
    _daemon_to_ourselves()
    run_a, run_b = tmp_path / "state-a", tmp_path / "state-b"
    vdev = tmp_path / "vdev.img"
    with open(vdev, "wb") as f:
        f.truncate(128 << 20)
    pool = f"fslabtest{os.getpid()}"
    monkeypatch.setenv("FSLAB_STATE_DIR", str(run_a))
    assert zfs.ensure_fuse_daemon() is True
    daemon = zfs.fuse_daemon_pid()
    try:
        monkeypatch.setenv("FSLAB_STATE_DIR", str(run_b))
        assert zfs.ensure_fuse_daemon() is False          # B uses A's daemon
        run(["zpool", "create", "-f", "-m", "none", "-o", "cachefile=none", pool, str(vdev)],
            timeout=120)
        monkeypatch.setenv("FSLAB_STATE_DIR", str(run_a))
        zfs.stop_fuse_daemon_if_ours()                     # A ends: B's pool keeps it
        assert zfs.fuse_daemon_pid() == daemon
        monkeypatch.setenv("FSLAB_STATE_DIR", str(run_b))
        zfs.destroy_zpool(pool)
        zfs.stop_fuse_daemon_if_ours()                     # B ends last: it stops it
        assert zfs.fuse_daemon_pid() is None
    finally:
        if zfs.fuse_daemon_pid() == daemon:
            run(["zpool", "destroy", "-f", pool], check=False, timeout=60)
            os.kill(daemon, signal.SIGKILL)
    # a daemon the user started is not fslab's: never stopped
    user = subprocess.Popen(["zfs-fuse", "--no-daemon", "--no-kstat-mount"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if zfs.fuse_daemon_pid() == user.pid:
                break
            time.sleep(0.05)
        zfs.stop_fuse_daemon_if_ours()
        assert user.poll() is None
    finally:
        user.terminate()
        user.wait(timeout=30)


def _measured_fio(results: Path) -> list[int]:
    """pids of the measured fio runs (not the layout) writing under `results`."""
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if argv[0].endswith("fio") and "--output-format=json+" in argv and str(results) in cmdline.read_text():
            pids.append(int(cmdline.parent.name))
    return pids


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _our_daemon(state_dir: Path) -> int | None:
    p = state_dir / "resources.json"
    entries = json.loads(p.read_text() or "[]") if p.exists() else []
    return next((int(e["daemon_pid"]) for e in entries
                 if e["kind"] == "daemon" and e["id"] == "zfs-fuse"), None)


@pytest.mark.e2e
def test_a_frozen_daemon_fails_its_unit_as_hung_and_a_fresh_one_serves_the_rest(
        state_dir, results, tmp_path):
    """SIGSTOP zfs-fuse while a unit's fio runs: the unit fails as hung within its
    deadline, the daemon fslab started is replaced, the later units succeed, and the run
    ends by itself with nothing left behind."""
    from fslab.filesystems import zfs
    _daemon_to_ourselves()
    work = tmp_path / "work"
    plan = tmp_path / "plan.toml"
    plan.write_text('[run]\nprofile = "smoke"\niterations = 2\nunit_timeout = 20\n'
                    '[[filesystem]]\nname = "zfs"\n'
                    '[[suite]]\nkind = "fio"\nworkloads = ["seqwrite", "randread"]\n')
    t0 = time.monotonic()
    proc = subprocess.Popen([*fslab_cmd(), "run", str(plan), "--results", str(results),
                             "--workdir", str(work)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "COLUMNS": "200"})
    frozen = None
    try:
        while proc.poll() is None and time.monotonic() - t0 < 120:
            if _measured_fio(results):   # the first unit's fio runs: freeze its daemon
                frozen = _our_daemon(state_dir)
                _freeze(frozen)
                break
            time.sleep(0.05)
        assert frozen, "no measured fio seen"
        out, _ = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
        if frozen:   # the test failed: do not leave it frozen
            _kill(frozen)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0, out
    db = sqlite3.connect(results / "fslab.sqlite")
    units = db.execute("SELECT status, message, started, finished FROM units "
                       "ORDER BY started").fetchall()
    assert len(units) == 4, units
    (status, message, started, finished), rest = units[0], units[1:]
    assert status == "failed" and message.startswith("hung: no result after 20 s (fio in "), message
    assert "killed zfs-fuse (pid %d) and started a fresh one" % frozen in message, message
    assert finished - started < 20 + 60, "the hung unit failed long after its deadline"
    assert [s for s, *_ in rest] == ["done"] * 3, rest
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "finished-with-failures"
    assert "hung: no result after 20 s" in out
    assert elapsed < 150
    # nothing left: no mount, loop device, pool, daemon (the frozen one is gone too)
    assert not leftovers(str(work))
    assert zfs.fuse_daemon_pid() is None
    assert not Path(f"/proc/{frozen}").exists() or \
        Path(f"/proc/{frozen}/stat").read_text().split()[2] == "Z"
    assert json.loads((state_dir / "resources.json").read_text() or "[]") == []
    assert not [m for m in open("/proc/self/mountinfo") if "fuse" in m and str(tmp_path) in m]


def test_a_daemon_that_freezes_before_teardown_is_replaced_and_its_pool_forgotten(
        state_dir, tmp_path, monkeypatch):
    """zfs-fuse stuck under a mounted pool (as in `zpool export -f` hanging): the teardown
    escalates after its time limit instead of waiting, and leaves nothing behind."""
    from fslab.filesystems import get, zfs
    from fslab.filesystems.base import Instance
    from fslab.plan import FilesystemSpec
    from fslab.targets.loop import LoopTarget
    _daemon_to_ourselves()
    monkeypatch.setattr(zfs, "TEARDOWN_TIMEOUT_S", 5)   # the 60 s limit, shortened
    work = tmp_path / "work"
    inst = Instance(get("zfs"), FilesystemSpec(name="zfs"), LoopTarget(work), work, "frz", 128 << 20)
    frozen = None
    try:
        inst.mkfs()
        inst.mount()
        (inst.mountpoint / "f").write_bytes(b"x" * 65536)
        frozen = zfs.fuse_daemon_pid()
        _freeze(frozen)
        t = time.monotonic()
        inst.close()
        assert time.monotonic() - t < 45
        assert f"killed zfs-fuse (pid {frozen}) and started a fresh one" in inst.info["recovered"]
        fresh = zfs.fuse_daemon_pid()
        assert fresh and fresh != frozen and zfs.responsive()
        assert zfs.pool_of(inst) not in zfs.pools_in_use()
    finally:
        if frozen:
            _kill(frozen)
        inst.close()
        zfs.stop_fuse_daemon_if_ours()
    assert not leftovers(str(work))
    assert zfs.fuse_daemon_pid() is None
    assert json.loads((state_dir / "resources.json").read_text() or "[]") == []


def test_two_runs_that_need_the_daemon_at_once_start_one_and_the_last_stops_it():
    """Two fslab processes that find no daemon at the same moment: one starts it, the other
    uses it (a host-wide lock); stopping leaves none (before the lock, two started and the
    unmarked one outlived every run)."""
    from multiprocessing import get_context
    from fslab.filesystems import zfs
    from fslab.filesystems.zfs_fuse_daemon import fuse_daemon_pids
    _daemon_to_ourselves()
    ctx = get_context("fork")
    try:
        with ctx.Pool(2) as pool:
            started = pool.starmap(_ensure_after, [(time.time() + 0.5,)] * 2)
        assert sorted(started) == [False, True]
        assert len(fuse_daemon_pids()) == 1 and zfs.responsive()
    finally:
        zfs.stop_fuse_daemon_if_ours()
    assert fuse_daemon_pids() == []


def _ensure_after(at: float) -> bool:
    from fslab.filesystems import zfs
    time.sleep(max(0.0, at - time.time()))
    return zfs.ensure_fuse_daemon()


def test_a_run_that_ends_leaves_the_daemon_another_run_just_started(state_dir):
    """Run A has started the daemon and not yet made its pool when run B ends: B must not
    stop it (before, "no pool in use" let B stop it under A's zpool create)."""
    from multiprocessing import get_context
    from fslab.filesystems import zfs
    _daemon_to_ourselves()
    ctx = get_context("fork")
    started, go = ctx.Event(), ctx.Event()
    run_a = ctx.Process(target=_use_until, args=(started, go))
    run_a.start()
    try:
        assert started.wait(120), "run A could not start the daemon"
        daemon = zfs.fuse_daemon_pid()
        run_b = ctx.Process(target=zfs.stop_fuse_daemon_if_ours)   # run B ends
        run_b.start()
        run_b.join(120)
        assert run_b.exitcode == 0
        assert zfs.fuse_daemon_pid() == daemon and zfs.responsive()
        go.set()
        run_a.join(120)
        assert run_a.exitcode == 0
        assert zfs.fuse_daemon_pid() is None   # A, the last to end, stopped it
    finally:
        go.set()
        run_a.join(30)
        zfs.stop_fuse_daemon_if_ours()


def _use_until(started, go) -> None:
    from fslab.filesystems import zfs
    assert zfs.ensure_fuse_daemon() is True
    started.set()
    go.wait(120)
    zfs.stop_fuse_daemon_if_ours()
