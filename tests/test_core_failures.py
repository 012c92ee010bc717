"""fio's own failures, Ctrl-C, and doctor: the run records what happened and cleans up."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time

import pytest

from conftest import (fslab_cmd, leftovers, mount_leftovers, needs_root, run_fslab,
                      sigint_as_at_a_terminal)

pytestmark = [pytest.mark.e2e, needs_root()]


def test_fio_failure_is_a_failed_iteration_with_fios_message(state_dir, results, tmp_path):
    p = run_fslab("run", "--fs", "ext4", "--suite", "fio", "--profile", "smoke", "--iterations", "1",
                  "--fio", "ioengine=no_such_engine", "--results", str(results),
                  "--workdir", str(tmp_path / "work"), check=False)
    assert p.returncode == 1, p.stderr   # the run completes, every unit failed: nothing measured
    db = sqlite3.connect(results / "fslab.sqlite")
    units = db.execute("SELECT status, message FROM units").fetchall()
    assert len(units) == 7 and all(s == "failed" for s, _ in units)
    assert all("no_such_engine" in m for _, m in units), units[0][1]
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "finished-with-failures"
    # the job file and fio's log are kept for the failed iteration
    adir = db.execute("SELECT artifact_dir FROM units").fetchone()[0]
    assert (results / adir / "job.fio").exists() and (results / adir / "fio.log").exists()
    assert not leftovers(str(tmp_path / "work"))


def test_a_unit_past_its_deadline_fails_as_hung_and_the_run_goes_on(state_dir, results, tmp_path):
    # [run] unit_timeout far below what the job needs: every fio unit is "hung" (killed
    # with its process group, filesystem torn down) and the run still ends by itself
    plan = tmp_path / "plan.toml"
    plan.write_text('[run]\nprofile = "smoke"\niterations = 1\nunit_timeout = 0.5\n'
                    '[[filesystem]]\nname = "ext4"\n[[filesystem]]\nname = "xfs"\n'
                    '[[suite]]\nkind = "fio"\nworkloads = ["randread", "seqwrite"]\n')
    t0 = time.monotonic()
    run_fslab("run", str(plan), "--results", str(results), "--workdir", str(tmp_path / "work"),
              check=False, timeout=300)
    assert time.monotonic() - t0 < 120
    units = sqlite3.connect(results / "fslab.sqlite").execute("SELECT status, message FROM units").fetchall()
    assert len(units) == 4 and all(s == "failed" for s, _ in units)
    # a round's two filesystems of a case run as one block of slices: its deadline is
    # theirs together, and the message says so
    assert all(m.startswith("hung: no result after 1 s (fio in ")
               and "the block of 2 filesystems' slices, each its unit's 0.5 s" in m
               for _, m in units), units
    assert not leftovers(str(tmp_path / "work"))
    assert json.loads((state_dir / "resources.json").read_text() or "[]") == []
    assert not subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True).stdout


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_tears_down_and_marks_the_run_interrupted(sig, state_dir, results, tmp_path):
    work = tmp_path / "work"
    proc = subprocess.Popen([*fslab_cmd(), "run", "--fs", "ext4,xfs", "--suite", "fio",
                             "--profile", "smoke", "--fio", "runtime=4", "--results", str(results),
                             "--workdir", str(work)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, preexec_fn=sigint_as_at_a_terminal)
    deadline = time.time() + 120
    while time.time() < deadline:   # interrupt while a filesystem is mounted and fio runs
        if mount_leftovers(str(work)):   # (zpool commands of other runs could make it slow)
            break
        time.sleep(0.1)
    time.sleep(1.0)
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert "--resume" in out
    assert not leftovers(str(work)), "Ctrl-C must tear down mounts and loop devices"
    # fio's job processes (numjobs=4, their own process group) went with it
    assert not subprocess.run(["pgrep", "-f", str(results)], capture_output=True).stdout
    status = sqlite3.connect(results / "fslab.sqlite").execute("SELECT status FROM runs").fetchone()[0]
    assert status == "interrupted"
    assert json.loads((state_dir / "resources.json").read_text() or "[]") == []


def test_doctor_json_reports_each_filesystem():
    out = json.loads(run_fslab("doctor", "--json").stdout)
    fss = out["filesystems"]
    for name in ("ext2", "ext3", "ext4", "xfs", "btrfs", "zfs", "tmpfs"):
        assert name in fss
        assert fss[name]["available"] or fss[name]["why"]
    assert fss["ext4"]["available"] and fss["ext4"]["how"] == "host kernel"
    assert out["root"] is (os.geteuid() == 0)
    assert out["tools"]["fio"].startswith("fio-")
