"""fslab decide for real: ext4 at its defaults against ext4 mounted `sync` on a 4 KiB
random-write job with fsyncs; `sync` goes at the first look, the store opens in report.

The job is buffered (the issue's job names no direct=): `sync` then turns 32 writes per
flush into one, 5-20x fewer IOPS here even on a loaded machine. With direct=1 the mount
option only adds metadata flushes (~2x), which other tests' fio beside this one can hide."""
from __future__ import annotations

import json
import re

import pytest

from conftest import needs_root, run_fslab

pytestmark = [needs_root(), pytest.mark.fio]

JOB = """[global]
ioengine=libaio
bs=4k
size=64m
time_based=1
runtime=1

[randwrite]
rw=randwrite
iodepth=16
fsync=32
"""

CANDIDATES = """[[candidate]]
name = "ext4"
variant = "plain"

[[candidate]]
name = "ext4"
variant = "sync"
mount_options = ["sync"]
safety = "trade"
trades = "nothing worth it: every write waits for the disk"
"""


def test_decide_eliminates_a_mount_option_that_costs_most_of_the_speed(tmp_path, state_dir):
    (tmp_path / "job.fio").write_text(JOB)
    (tmp_path / "c.toml").write_text(CANDIDATES)
    results = tmp_path / "r"
    safe_only = run_fslab("decide", "--job", str(tmp_path / "job.fio"), "--candidates",
                          str(tmp_path / "c.toml"), "--results", str(results), check=False)
    assert safe_only.returncode == 2 and "fewer than 2 candidates" in safe_only.stderr + safe_only.stdout
    p = run_fslab("decide", "--job", str(tmp_path / "job.fio"), "--candidates", str(tmp_path / "c.toml"),
                  "--allow", "trade", "--profile", "smoke", "--json", "--keep-going",
                  "--results", str(results))
    dec = json.loads(p.stdout)      # stdout holds the JSON alone (progress on stderr)
    assert dec["leader"] == "ext4:plain", p.stdout
    by = {c["label"]: c for c in dec["candidates"]}
    # eliminated at round 3 (the first look) on a quiet machine; when other work shares
    # the disk (CI's parallel tests) the rounds can be too noisy to show it worse at the
    # look's level, and it is retired instead, shown not 3% better than the default (the
    # same look, the same t quantile for two candidates, less a 3% margin): either way it
    # runs no more rounds, and the default is the answer
    sync = by["ext4:sync"]
    if sync["eliminated_round"] is not None:
        assert dec["verdict"] == "winner" and "within rounds" in sync["why"], p.stdout
    else:
        assert sync["retired_round"] is not None and "not 3% better than ext4:plain" in sync["why"], p.stdout
        assert dec["verdict"] == "tie" and dec["stopped"] == "none delta better than the leader"
    assert sync["safety"] == "trade" and "below" in sync["why"]
    assert by["ext4:plain"]["p_best"] >= 0.95
    assert dec["units_run"] <= dec["units_full_factorial"] == 2 * 10
    assert dec["units_run"] == 2 * dec["rounds"]
    assert dec["commands"][0] == "mkfs.ext4 /dev/DEVICE"
    # the job writes and fsyncs: raced on its write IOPS and its fsyncs' p99 together
    assert "write IOPS" in dec["metric"] and "fsync" in dec["metric"], dec["metric"]
    report = run_fslab("report", "--results", str(results))
    assert "Decision (fslab decide" in report.stdout and "ext4:plain" in report.stdout
    run_fslab("report", "--results", str(results), "--html", str(tmp_path / "r.html"))
    page = (tmp_path / "r.html").read_text()
    assert f"Decision of fslab decide (run {dec['run']})" in page and "ratio to the winner" in page


PLANTED = """[[candidate]]
name = "ext4"
variant = "orig"

[[candidate]]
name = "ext4"
variant = "slow10"
throttle = "10%"
"""


def test_a_clone_throttled_by_10_percent_is_never_ranked_above_its_original(tmp_path, state_dir):
    """A planted slowdown (bench/decide --real-planted): the clone's fio jobs idle 10% of
    the time; the race may not separate it on a noisy machine (a tie), but it must never
    eliminate the original; a throttled leader gets no commands to type."""
    (tmp_path / "job.fio").write_text(JOB)
    (tmp_path / "c.toml").write_text(PLANTED)
    results = tmp_path / "r"
    p = run_fslab("decide", "--job", str(tmp_path / "job.fio"), "--candidates", str(tmp_path / "c.toml"),
                  "--profile", "smoke", "--json", "--keep-going", "--results", str(results))
    dec = json.loads(p.stdout)
    by = {c["label"]: c for c in dec["candidates"]}
    assert by["ext4:orig"]["eliminated_round"] is None, p.stdout
    assert not (dec["verdict"] == "winner" and dec["winner"] == "ext4:slow10"), p.stdout
    slow = by["ext4:slow10"]
    assert slow["throttle"] == 0.1 and slow["options"] == "throttled 10% (a planted slowdown)"
    assert by["ext4:orig"]["throttle"] is None
    if dec["leader"] == "ext4:slow10":
        assert dec["commands"] == []
    # the clone's fio ran the duty cycle, the original's did not
    run_dir = results / "runs" / dec["run"]
    slow_jobs = list((run_dir / "ext4-slow10").rglob("job.fio"))
    orig_jobs = list((run_dir / "ext4-orig").rglob("job.fio"))
    assert len(slow_jobs) == slow["rounds"] and orig_jobs
    assert all("thinktime=10000us\nthinktime_iotime=90000us" in j.read_text() for j in slow_jobs)
    assert not any("thinktime" in j.read_text() for j in orig_jobs)
    ran = json.loads(next((run_dir / "ext4-slow10").rglob("fio.json")).read_text())
    assert ran["jobs"][0]["job options"]["thinktime"] == "10000us"


def test_a_decide_combines_the_options_that_helped_in_a_second_stage_of_the_same_run(tmp_path, state_dir):
    """Stage 1 races ext4's options one at a time; the ones ahead of the defaults (a
    shared machine's noise decides which, so both outcomes are checked) are combined and
    raced again on fresh rounds after stage 1's, stored in the same run."""
    (tmp_path / "job.fio").write_text(JOB)
    results = tmp_path / "r"
    p = run_fslab("decide", "--job", str(tmp_path / "job.fio"), "--fs", "ext4", "--options",
                  "noatime,inode_readahead_blks", "--max-rounds", "4", "--profile", "smoke",
                  "--json", "--keep-going", "--results", str(results))
    dec = json.loads(p.stdout)
    first = dec["stages"][0]
    assert first["kind"] == "options" and first["first_round"] == 1 and len(first["candidates"]) == 4
    if len(dec["stages"]) == 1:      # fewer than two options ahead of the defaults
        assert len(dec["stage_notes"]) == 1 and dec["stage_notes"][0].startswith("no combination stage: ext4: ")
        return
    second = dec["stages"][1]
    assert second["kind"] == "combine" and "ext4:combined" in second["candidates"] and "ext4" in second["candidates"]
    assert second["first_round"] == first["rounds"] + 1 and second["seed"] == first["seed"] + 1
    assert {c["label"] for c in dec["candidates"]} == set(second["candidates"])
    combined = next(c for c in dec["candidates"] if c["label"] == "ext4:combined")
    assert " + " in combined["changed"] and second["why"].startswith("ext4: combined ")
    assert dec["units_run"] == first["units_run"] + second["units_run"]
    report = run_fslab("report", dec["run"], "--results", str(results))
    assert "Stage 2: the options that helped, combined" in report.stdout
    assert "Final (stage 2, the last stage's candidates only)" in report.stdout


DB = """[global]
ioengine=psync
bs=4k
size=16m
time_based=1
runtime=1
group_reporting=1
numjobs=2

[dbwrite]
rw=randwrite
fsync=1

[dbread]
rw=randread
"""

TWO = """[[candidate]]
name = "ext4"

[[candidate]]
name = "ext4"
variant = "noatime"
mount_options = ["noatime"]
"""


def test_a_database_job_file_is_raced_on_reads_writes_and_fsyncs_and_noise_stops_it(tmp_path, state_dir):
    """Issue 36's job file (group_reporting over a fsync'd writer and a reader): raced on
    read IOPS, write IOPS and p99 fsync latency, named in the first line; at --delta 0.1%
    no loop image can decide, so the decide stops at its first look, says so, and prints
    the leader's commands only as a best guess; --json leaves stdout to the JSON alone."""
    (tmp_path / "db.fio").write_text(DB)
    (tmp_path / "c.toml").write_text(TWO)
    results = tmp_path / "r"
    p = run_fslab("decide", "--job", str(tmp_path / "db.fio"), "--candidates", str(tmp_path / "c.toml"),
                  "--profile", "smoke", "--delta", "0.001", "--json", "--results", str(results))
    dec = json.loads(p.stdout)
    for m in ("read IOPS", "write IOPS", "fsync"):
        assert m in dec["metric"], dec["metric"]
    assert set(dec["metrics"].values()) == {"read_iops, write_iops, sync_lat_p99"}
    assert "job=dbwrite+dbread" not in dec["metric"] and "dbwrite+dbread" in next(iter(dec["metrics"]))
    # the count is against the most the race can run, and ends where the decision says
    assert "unit 1 of at most 20" in p.stderr and "unit 6 of at most 20" in p.stderr
    assert "unit 7 of" not in p.stderr and dec["rounds"] == 3 and dec["units_run"] == 6
    report = run_fslab("report", dec["run"], "--results", str(results))
    text = report.stdout
    if dec["verdict"] == "winner":
        # The first look may separate the pair outright (CI once saw 11.5% at Holm
        # p=0.0076): a winner then stands on that test, and the stop for --delta is moot.
        assert re.search(r"eliminated ext4(:noatime)?: round 3: .* Holm p=[0-9.]+ < ", p.stderr), p.stderr
        assert dec["winner"] == dec["leader"] and not dec.get("cannot_decide"), dec
        assert "best guess, not shown better" not in text
        return
    assert dec["verdict"] == "undecided" and dec["winner"] is None and dec["leader"], p.stderr
    assert dec["decided"] is False
    assert "cannot decide a 0.1% difference" in dec["cannot_decide"] and "--keep-going" in p.stderr
    assert "Cannot decide at --delta 0.1% (geometric mean" in text, text
    assert "best guess, not shown better" in text and "to apply it (a real" not in text


MISSPELLED = """[[candidate]]
name = "ext4"

[[candidate]]
name = "ext4"
variant = "typo"
mount_options = ["noatim"]
"""


def test_a_misspelled_option_in_the_users_own_candidates_is_refused_before_any_run(tmp_path, state_dir):
    """Dropped with a line and raced on (exit 0) once; `fslab run` refuses it (exit 2)."""
    (tmp_path / "job.fio").write_text(JOB)
    (tmp_path / "c.toml").write_text(MISSPELLED)
    results = tmp_path / "r"
    p = run_fslab("decide", "--job", str(tmp_path / "job.fio"), "--candidates", str(tmp_path / "c.toml"),
                  "--profile", "smoke", "--results", str(results), check=False)
    out = p.stdout + p.stderr
    assert p.returncode == 2, out
    assert "ext4:typo" in out and "noatim" in out and "your candidate" in out
    assert "Traceback" not in out and "racing" not in out
    assert not (results / "fslab.sqlite").exists() or not list(
        __import__("sqlite3").connect(results / "fslab.sqlite").execute("SELECT run_id FROM runs"))
