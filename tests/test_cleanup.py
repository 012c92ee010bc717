"""`fslab cleanup` cleans what dead fslab processes left, never a running one's resources,
and stops the children a kill -9 left running before they attach what no list knows."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from conftest import fslab_cmd, leftovers, needs_root, run_fslab
from fslab.system import state


def _dead_pid() -> tuple[int, int]:
    """A pid and start time of a process that has exited."""
    p = subprocess.Popen(["sleep", "0"])
    started = state.process_start(p.pid)
    p.wait()
    return p.pid, started


def _write_entries(state_dir: Path, entries: list[dict]) -> None:
    (state_dir / "resources.json").write_bytes(orjson.dumps(entries))


def test_cleanup_leaves_a_running_fslabs_resources_and_removes_a_dead_ones(state_dir, tmp_path):
    live_dir, dead_dir, reused_dir = (tmp_path / n for n in ("live", "dead", "reused"))
    for d in (live_dir, dead_dir, reused_dir):
        d.mkdir()
    dead_pid, dead_started = _dead_pid()
    me = os.getpid()   # this test stands for a running fslab
    _write_entries(state_dir, [
        {"kind": "dir", "id": str(live_dir), "pid": me, "started": state.process_start(me)},
        {"kind": "dir", "id": str(dead_dir), "pid": dead_pid, "started": dead_started},
        # the pid is running, but it is a later process than the one that noted the entry
        {"kind": "dir", "id": str(reused_dir), "pid": me, "started": state.process_start(me) - 1},
    ])
    p = run_fslab("cleanup")
    assert live_dir.exists(), p.stdout
    assert not dead_dir.exists() and not reused_dir.exists(), p.stdout
    assert f"left 1 resource of fslab process {me}, still running" in p.stdout
    assert [e["id"] for e in state.entries()] == [str(live_dir)]


def test_cleanup_stops_a_child_a_killed_fslab_left_running(state_dir, tmp_path):
    """A dead fslab's child (here a sleep standing for a slow losetup) is killed before the
    list is torn down, and only one tagged with this state dir."""
    work = tmp_path / "work"
    pidfile = tmp_path / "child.pid"
    script = f"""
import os, subprocess
from fslab.system import state
state.note("dir", {str(work)!r})
os.mkdir({str(work)!r})
child = subprocess.Popen(["sleep", "300"], start_new_session=True)
open({str(pidfile)!r}, "w").write(str(child.pid))
os._exit(0)   # as after a kill -9: no teardown
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60,
                   env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")})
    child = int(pidfile.read_text())
    other = subprocess.Popen(["sleep", "300"], start_new_session=True,
                             env={**os.environ, state.OWNER_ENV: f"{child}:1:/elsewhere"})
    try:
        assert Path(f"/proc/{child}").exists()
        p = run_fslab("cleanup")
        assert f"removed process {child}" in p.stdout, p.stdout
        assert not work.exists()
        deadline = time.time() + 10
        while _running(child) and time.time() < deadline:
            time.sleep(0.05)
        assert not _running(child)
        assert other.poll() is None   # another state dir's: not ours to stop
    finally:
        other.kill()
        other.wait()
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _running(pid: int) -> bool:
    """Not exited: a zombie has (this machine's init may take a second or more to reap an
    orphan, which the test has no reason to wait for)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


JOB = """[global]
ioengine=psync
size=16m
runtime={runtime}
time_based=1

[reader]
rw=randread
bs=4k
"""


def _units_done(db: Path) -> int:
    import sqlite3
    if not db.exists():
        return 0
    try:
        return sqlite3.connect(db).execute("SELECT COUNT(*) FROM units WHERE status='done'").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


@needs_root()
def test_cleanup_during_a_run_leaves_it_running_and_cleans_a_killed_one(state_dir, tmp_path):
    """Two runs: one killed -9 mid-run, then `fslab cleanup` while the other runs; the
    killed one's mount and loop device go, the running one finishes."""
    live_job, killed_job = tmp_path / "live.fio", tmp_path / "killed.fio"
    live_job.write_text(JOB.format(runtime=25))
    killed_job.write_text(JOB.format(runtime=120))
    live = subprocess.Popen([*fslab_cmd(), "run", "--fs", "ext4", "--job", str(live_job), "-n", "1",
                             "--results", str(tmp_path / "r-live"), "--workdir", str(tmp_path / "w-live")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    killed = subprocess.Popen([*fslab_cmd(), "run", "--fs", "ext4", "--job", str(killed_job), "-n", "1",
                               "--results", str(tmp_path / "r-dead"), "--workdir", str(tmp_path / "w-dead")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 300
        while time.time() < deadline and not (mount_of(tmp_path / "w-live") and mount_of(tmp_path / "w-dead")):
            assert live.poll() is None and killed.poll() is None
            time.sleep(0.2)
        assert mount_of(tmp_path / "w-dead") and mount_of(tmp_path / "w-live")
        killed.kill()
        killed.wait()
        p = run_fslab("cleanup")
        assert "still running" in p.stdout, p.stdout
        assert not leftovers(str(tmp_path / "w-dead")), p.stdout
        assert mount_of(tmp_path / "w-live"), p.stdout
        out, _ = live.communicate(timeout=600)
        assert live.returncode == 0, out
        assert _units_done(tmp_path / "r-live" / "fslab.sqlite") == 1
        assert not leftovers(str(tmp_path))
    finally:
        for proc in (live, killed):
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=120)


def mount_of(workdir: Path) -> list[str]:
    from conftest import mount_leftovers
    return mount_leftovers(str(workdir))


SLOW_LOSETUP = """#!/bin/sh
# losetup as it is under load: it attaches, then is slow to say which device
case "$*" in *--find*) ;; *) exec {real} "$@" ;; esac
out=$({real} "$@") || exit $?
touch {mark}
sleep 120
echo "$out"
"""


@needs_root()
def test_kill9_during_an_attach_then_cleanup_leaves_no_loop_device(state_dir, tmp_path):
    """fslab killed -9 while losetup is attaching: the losetup that outlives it is stopped
    and the device it attached is detached, though no list names it and its image goes."""
    bindir, mark, work = tmp_path / "bin", tmp_path / "attached", tmp_path / "work"
    bindir.mkdir()
    wrapper = bindir / "losetup"
    wrapper.write_text(SLOW_LOSETUP.format(real=subprocess.run(
        ["sh", "-c", "command -v losetup || echo /usr/sbin/losetup"], capture_output=True,
        text=True).stdout.strip() or "/usr/sbin/losetup", mark=mark))
    wrapper.chmod(0o755)
    job = tmp_path / "job.fio"
    job.write_text(JOB.format(runtime=1))
    proc = subprocess.Popen([*fslab_cmd(), "run", "--fs", "ext4", "--job", str(job), "-n", "1",
                             "--results", str(tmp_path / "results"), "--workdir", str(work)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"})
    try:
        deadline = time.time() + 300
        while not mark.exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert mark.exists(), "fslab never attached a loop device"
    finally:
        proc.kill()
        proc.wait()
    assert _loops_under(work), "the slow losetup should have attached"
    p = run_fslab("cleanup")
    time.sleep(1)
    assert not _loops_under(work), p.stdout
    assert not leftovers(str(work)), p.stdout
    assert not list(work.glob("*.img")), p.stdout


def _loops_under(work: Path) -> list[str]:
    """Loop devices backed by a file under work, deleted ones included."""
    out = []
    for backing in Path("/sys/block").glob("loop*/loop/backing_file"):
        try:
            if backing.read_text().startswith(str(work)):
                out.append(backing.parent.parent.name)
        except OSError:
            pass
    return out
