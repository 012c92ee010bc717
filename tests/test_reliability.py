"""Reliability suites end to end: integrity, enospc and aging on real loop images, via the CLI.

The integrity assertions check that the classification is internally consistent with
the evidence the run collected, and that the checksumming filesystems (btrfs, zfs)
did not return a flipped data block silently. If they ever do, these tests fail: the
measurement is the claim, and hiding a surprise would defeat the suite.
"""
from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import fslab_cmd, needs_root, run_fslab

from fslab.system import fiemap
from fslab.workloads.support import gitreplay
from fslab.workloads.support.bitflip import MAGIC, Location, flip, scan_images, tag

OUTCOMES = {"detected", "silent", "healed"}


# --- pure pieces (no root) -----------------------------------------------------

def test_scan_finds_every_tag_and_flip_changes_only_its_bytes(tmp_path):
    img = tmp_path / "img"
    nonce = b"\x01" * 8
    with open(img, "wb") as f:
        f.truncate(64 << 20)                       # sparse: the scan must skip the holes
        for i, off in enumerate((0, 4096 * 7, 40 << 20, (64 << 20) - 4096)):
            f.seek(off)
            f.write(tag(nonce, 3, i) + b"x" * 100)
    found = scan_images([str(img)], MAGIC + nonce, extra=4)
    assert {k: [loc.offset for loc in v] for k, v in found.items()} == {
        tag(nonce, 3, 0): [0], tag(nonce, 3, 1): [4096 * 7],
        tag(nonce, 3, 2): [40 << 20], tag(nonce, 3, 3): [(64 << 20) - 4096]}
    before = img.read_bytes()
    flip([str(img)], Location(0, 4096 * 7), 16, 8)
    after = img.read_bytes()
    # every differing byte of the 64 MiB image (numpy: a Python loop over it takes seconds)
    diff = np.flatnonzero(np.frombuffer(before, np.uint8) != np.frombuffer(after, np.uint8)).tolist()
    assert diff == list(range(4096 * 7 + 16, 4096 * 7 + 24))


def test_generated_history_is_deterministic_and_realistic(tmp_path):
    spec = gitreplay.HistorySpec(seed=3, files=200, commits=25)
    a = gitreplay.generate(tmp_path / "a", spec)
    b = gitreplay.generate(tmp_path / "b", spec)
    assert a == b and len(a) == 26
    assert gitreplay.generate(tmp_path / "a", spec) == a          # cached
    log = subprocess.run(["git", "log", "--name-status", "--format=", "-M"], cwd=tmp_path / "a",
                         capture_output=True, text=True, check=True).stdout
    kinds = {line.split("\t")[0][0] for line in log.splitlines() if line}
    assert {"A", "M", "D", "R"} <= kinds, kinds
    depth = max(p.relative_to(tmp_path / "a").as_posix().count("/")
                for p in (tmp_path / "a").rglob("*") if ".git" not in p.parts)
    assert depth >= 4


def test_layout_score_of_a_file_is_between_0_and_1(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(random.Random(1).randbytes(1 << 20))
    os.sync()
    try:
        lay = fiemap.layout([str(p)])
    except fiemap.FiemapUnsupported:
        pytest.skip("the filesystem under /tmp has no FIEMAP")
    assert lay.blocks == 256 and 0 <= lay.score <= 1


# --- end to end (root) --------------------------------------------------------

def _db(results: Path) -> sqlite3.Connection:
    return sqlite3.connect(results / "fslab.sqlite")


def _units(results: Path) -> list[tuple]:
    return _db(results).execute('SELECT fs, variant, "case", status, message FROM units').fetchall()


def _records(results: Path, **where) -> dict[str, float]:
    cond = " AND ".join(f'"{k}"=?' for k in where)
    rows = _db(results).execute(f"SELECT metric, value FROM records WHERE {cond}",
                                tuple(where.values())).fetchall()
    return dict(rows)


def _artifact(results: Path, name: str, **where) -> dict:
    cond = " AND ".join(f'"{k}"=?' for k in where)
    (art,) = _db(results).execute(f"SELECT DISTINCT artifact FROM records WHERE {cond} "
                                  "AND artifact LIKE ?", (*where.values(), f"%{name}")).fetchone()
    return json.loads((results / art).read_text())


def _run_all_done(results: Path, tmp_path: Path, *args: str) -> None:
    run_fslab("run", *args, "--results", str(results), "--workdir", str(tmp_path / "w"))
    assert all(u[3] == "done" for u in _units(results)), _units(results)


def _no_leftovers(tmp_path: Path, state_dir: Path) -> list[str]:
    """Our mounts and loop devices (all under tmp_path), and our state file's entries."""
    out = [line.split()[4] for line in open("/proc/self/mountinfo") if str(tmp_path) in line]
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    out += [ln for ln in loops.splitlines() if str(tmp_path) in ln and "(deleted)" not in ln]
    res = state_dir / "resources.json"
    if res.exists() and res.read_text().strip() not in ("", "[]"):
        out.append(res.read_text())
    return out


def _small_repo(path: Path, commits: int = 3) -> Path:
    gitreplay.init_repo(path)
    for i in range(commits):
        (path / f"f{i}.c").write_text(f"int f{i}(void) {{ return {i}; }}\n" * 50)
        gitreplay.git(["add", "."], path)
        gitreplay.git(["commit", "-q", "-m", f"c{i}"], path)
    return path


def test_fetch_clones_once_and_says_why_it_cannot(tmp_path):
    """S4 at paper fetches the study's history; without the network it must say why in
    seconds, so the generated history can stand in (file:// URLs: no network needed)."""
    src = _small_repo(tmp_path / "src")
    got, why = gitreplay.fetch(f"file://{src}", root=tmp_path / "cache")
    assert why == "" and got is not None and (got / "fslab-complete").exists()
    assert gitreplay.first_parent_commits(str(got), 10) == \
        gitreplay.first_parent_commits(str(src), 10)
    (src / ".git").rename(tmp_path / "gone")          # cached: no second clone
    assert gitreplay.fetch(f"file://{src}", root=tmp_path / "cache") == (got, "")
    t = time.monotonic()
    got, why = gitreplay.fetch(f"file://{tmp_path}/nowhere.git", root=tmp_path / "cache")
    assert got is None and why.startswith(f"it could not be reached (fatal: '{tmp_path}/nowhere")
    assert time.monotonic() - t < 30


def test_a_stand_in_history_is_said_before_any_number():
    from fslab.results.provenance import measured_where
    from fslab.store.environment import environments_of
    env = {"workloads": {"aging:git": {"history": "generated source tree (200 files, seeded)",
                                       "stand_in": "a generated source history (200 files, "
                                                   "seeded) stood in for URL: unreachable"},
                         "aging:churn": {"stand_in": None}}}
    assert measured_where(environments_of([{"environment": env}])) == [
        "aging:git: a generated source history (200 files, seeded) stood in for URL: unreachable"]


@needs_root()
@pytest.mark.e2e
def test_integrity_matrix_is_measured_and_consistent(state_dir, results, tmp_path):
    _run_all_done(results, tmp_path, "--fs", "ext4,xfs,btrfs,zfs", "--suite", "integrity",
                  "--profile", "smoke", "--iterations", "1")
    for fs in ("ext4", "xfs", "btrfs", "zfs"):
        for case in ("data", "metadata"):
            res = _artifact(results, "integrity.json", fs=fs, case=case)
            rec = _records(results, fs=fs, case=case)
            damaged = [v for v in res["victims"] if v["outcome"] is not None]
            # every damaged file or directory is classified exactly once, consistently
            assert len({v["name"] for v in res["victims"]}) == len(res["victims"])
            assert all(v["outcome"] in OUTCOMES for v in damaged)
            assert rec["damaged"] == len(damaged) == sum(res["counts"].values())
            for o in OUTCOMES if damaged else ():
                assert rec[o] == res["counts"][o]
            for v in damaged:
                assert (v["error"] is not None) == (v["outcome"] == "detected"), v
                # correct data after a flip needs a good copy somewhere
                if v["outcome"] == "healed":
                    assert v["copies_found"] >= 2, (fs, case, v)
            if case == "data":
                assert res["tagged_blocks_found"] >= res["tagged_blocks_written"], (fs, res)
                assert len(damaged) == len(res["victims"]) > 0
                if fs != "zfs":
                    assert rec["fiemap_agreement"] == 1.0, (fs, res["fiemap_crosscheck"])
            if not damaged:
                assert res["not_damaged"] and "detected" not in rec, (fs, case)
    # data checksums: a flipped data block must not come back silently
    for fs in ("btrfs", "zfs"):
        rec = _records(results, fs=fs, case="data")
        assert rec["silent"] == 0, f"{fs} returned corrupted data silently: {rec}"
        assert rec["detected"] + rec["healed"] == rec["damaged"]
    assert _records(results, fs="btrfs", case="data")["reported_corruption_errs"] > 0
    assert _records(results, fs="zfs", case="data")["reported_cksum_errors"] > 0
    # ext4 and xfs have no data checksums: whatever came back was measured, and said
    for fs in ("ext4", "xfs"):
        rec = _records(results, fs=fs, case="data")
        assert rec["silent"] + rec["detected"] + rec["healed"] == rec["damaged"]
    assert not _no_leftovers(tmp_path, state_dir)


@needs_root()
@pytest.mark.e2e
def test_enospc_fills_and_recovers(state_dir, results, tmp_path):
    _run_all_done(results, tmp_path, "--fs", "ext4,xfs", "--suite", "enospc", "--profile", "smoke",
                  "--iterations", "1")
    for fs in ("ext4", "xfs"):
        for case in ("large_file", "small_files"):
            rec = _records(results, fs=fs, case=case)
            res = _artifact(results, "enospc.json", fs=fs, case=case)
            assert rec["fill_reached_enospc"] == 1 and rec["fill_errno"] == 28, (fs, case, res)
            failed = [m for m in rec if m.startswith("fill_failed_at_")]
            assert failed == [f"fill_failed_at_{res['fill_result']['failed_call']}"]
            assert 0 < rec["usable_bytes"] <= rec["image_bytes"]
            # written at failure is close to what statvfs promised (root may use reserved blocks)
            assert 0.6 * rec["usable_bytes"] < rec["filled_bytes"] < 1.1 * rec["usable_bytes"]
            assert rec["precious_intact"] == 1 and rec["checker_clean"] == 1
            assert rec["reclaimed_fraction"] > 0.9
            assert {f"when_full_{op}_ok" for op in ("create", "mkdir", "append", "overwrite",
                                                     "rename", "rm")} <= set(rec)
            if case == "small_files":
                assert rec["filled_files"] > 1000
    assert not _no_leftovers(tmp_path, state_dir)


HISTORIES: dict[str, str] = {}
AGING_PLAN = """
[run]
profile = "smoke"
iterations = 1
[[filesystem]]
name = "{fs}"
[[suite]]
kind = "aging"
workloads = {workloads}
pulls = {pulls}
every = {every}
files = 200
overwrites = 1
steps_per_overwrite = 6
"""


@needs_root()
@pytest.mark.e2e
@pytest.mark.parametrize("fs", ["ext4", "zfs"])
def test_aging_smoke_records_curves(fs, state_dir, results, tmp_path):
    plan = tmp_path / "aging.toml"
    plan.write_text(AGING_PLAN.format(fs=fs, workloads='["git", "churn"]', pulls=6, every=3))
    _run_all_done(results, tmp_path, str(plan))
    db = _db(results)
    for case in ("git", "churn"):          # both 6 steps, measured at 0 (both fresh) and every 3
        rows = db.execute("SELECT params, metric, value FROM records WHERE \"case\"=? AND "
                          "params LIKE '%\"step\"%'", (case,)).fetchall()
        by_step: dict[int, dict[str, float]] = {}
        for params, metric, value in rows:
            by_step.setdefault(json.loads(params)["step"], {})[metric] = value
        assert sorted(by_step) == [0, 3, 6], (case, by_step)
        for s, m in by_step.items():
            assert m["grep_cost_aged"] > 0 and m["grep_cost_unaged"] > 0
            assert m["aging_factor"] == pytest.approx(m["grep_cost_aged"] / m["grep_cost_unaged"])
            assert m["tree_bytes"] > 0
        if case == "git":   # pull 0 greps the initial tree (200 files), not an empty repository
            assert by_step[0]["tree_files"] > 200 and by_step[0]["tree_bytes"] > 200 * 1024
            if fs == "zfs":   # no FIEMAP: no layout number at all, and it says so
                assert "layout_score_aged" not in m and m["layout_measurable"] == 0
            else:
                assert 0 < m["layout_score_aged"] <= 1 and 0 < m["layout_score_unaged"] <= 1
    rec = _records(results, case="git")
    assert rec["failed_steps"] == 0 and rec["resumes"] == 0 and rec["successful_pulls"] == 6
    assert not list(results.glob("runs/*/aging-state/*")), "kept images must go once done"
    units = db.execute("SELECT unit FROM records WHERE metric='grep_cost_aged'").fetchall()
    assert {u for (u,) in units} == {"s/GB"}   # the study's unit
    # every filesystem is aged by the same history (same plan seed and iteration)
    HISTORIES[fs] = _artifact(results, "aging-journal.json", case="git")["source"]["history_sha"]
    assert len(set(HISTORIES.values())) == 1, HISTORIES
    assert not _no_leftovers(tmp_path, state_dir)


@needs_root()
@pytest.mark.e2e
def test_aging_resumes_after_kill9_from_its_journal(state_dir, results, tmp_path):
    plan = tmp_path / "aging.toml"
    plan.write_text(AGING_PLAN.format(fs="ext4", workloads='["git"]', pulls=24, every=8))
    p = subprocess.Popen([*fslab_cmd(), "run", str(plan), "--results", str(results)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env={**os.environ, "FSLAB_STATE_DIR": str(state_dir)})
    deadline, step = time.time() + 300, 0
    while time.time() < deadline and step < 12:
        time.sleep(0.3)
        for j in results.glob("runs/*/aging-state/**/journal.json"):
            try:
                step = json.loads(j.read_text()).get("next_step", 0)
            except ValueError:
                pass
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert step >= 12, "the aging run did not get far enough to be killed mid-way"
    (run_id,) = _db(results).execute("SELECT run_id FROM runs").fetchone()
    assert list(results.glob(f"runs/{run_id}/aging-state/**/disk0.img")), "image must be kept"
    run_fslab("run", "--resume", run_id, "--results", str(results))
    rec = _records(results, case="git")
    assert rec["resumes"] == 1 and rec["failed_steps"] == 0
    steps = {json.loads(p)["step"] for (p,) in _db(results).execute(
        "SELECT params FROM records WHERE metric='grep_cost_aged'")}
    assert steps == {0, 8, 16, 24}       # measurements from before the kill are kept
    assert not _no_leftovers(tmp_path, state_dir)
    assert not list(results.glob(f"runs/{run_id}/aging-state/*"))


@needs_root()
@pytest.mark.e2e
def test_aging_logs_a_failed_pull_and_goes_on(state_dir, results, tmp_path):
    """A user repository with a missing object: that pull fails (git's fetch dies with 128,
    `git pull` itself exits non-zero), is logged with git's own words, and the unit still
    finishes with its measurements."""
    src = tmp_path / "src"
    gitreplay.init_repo(src)
    for i in range(5):
        (src / f"f{i}.c").write_text(f"int f{i}(void) {{ return {i}; }}\n" * 200)
        gitreplay.git(["add", "."], src)
        gitreplay.git(["commit", "-q", "-m", f"c{i}"], src)
    blob = gitreplay.git(["rev-parse", "HEAD~2:f2.c"], src).stdout.strip()
    (src / ".git" / "objects" / blob[:2] / blob[2:]).unlink()      # commit 3 cannot be sent
    plan = tmp_path / "aging.toml"
    plan.write_text(AGING_PLAN.format(fs="ext4", workloads='["git"]', pulls=4, every=4)
                    + f'repo = "{src}"\n')
    _run_all_done(results, tmp_path, str(plan))
    rec = _records(results, case="git")
    assert rec["failed_steps"] >= 1 and "grep_cost_aged" in rec
    # the x axis counts successful pulls only: the last grep is at the last successful pull
    assert rec["successful_pulls"] == 4 - rec["failed_steps"]   # c0 is the initial tree
    steps = {json.loads(p)["step"] for (p,) in _db(results).execute(
        "SELECT params FROM records WHERE metric='grep_cost_aged'")}
    assert steps == {0, rec["successful_pulls"]}
    journal = _artifact(results, "aging-journal.json", case="git")
    first = journal["failures"][0]
    assert first["step"] == 2 and first["exit"] != 0 and "corruption" in first["output"], first
    log = next(results.glob("runs/*/ext4-default/aging-git-*/iter-001/failed-steps.log")).read_text()
    assert f"step 2 {first['sha']}: git pull exit {first['exit']}" in log
    assert not _no_leftovers(tmp_path, state_dir)


@needs_root()
@pytest.mark.e2e
def test_aging_stops_after_the_successful_pulls_the_study_stopped_at(state_dir, results, tmp_path):
    plan = tmp_path / "aging.toml"
    plan.write_text(AGING_PLAN.format(fs="ext4", workloads='["git"]', pulls=8, every=2)
                    + "stop_after = 3\n")
    _run_all_done(results, tmp_path, str(plan))
    rec = _records(results, case="git")
    assert rec["successful_pulls"] == 3 and rec["failed_steps"] == 0
    steps = {json.loads(p)["step"] for (p,) in _db(results).execute(
        "SELECT params FROM records WHERE metric='grep_cost_aged'")}
    assert steps == {0, 2, 3}
    env = json.loads(_db(results).execute("SELECT environment FROM runs").fetchone()[0])
    said = env["workloads"]["aging:git"]   # which history was replayed, and how
    assert said["x_axis"] == "successful pulls" and said["stop_after"] == 3
    assert said["history"].startswith("generated source tree") and len(said["history_sha1"]) == 40
    assert not _no_leftovers(tmp_path, state_dir)


@needs_root()
@pytest.mark.e2e
def test_aging_replays_a_fetched_history_or_says_a_generated_one_stood_in(state_dir, results,
                                                                        tmp_path):
    """Issue 27: S4 at paper replayed a generated history unless `repo` was set. With
    repo_url the history is fetched (here over file://, as the kernel's would be over
    https); where it cannot be, the generated one stands in and the report says so."""
    src = _small_repo(tmp_path / "src", commits=5)   # the initial tree and 4 pulls
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    for url, stands_in in ((f"file://{src}", False), (f"file://{tmp_path}/offline.git", True)):
        out = tmp_path / ("r-gen" if stands_in else "r-url")
        plan = tmp_path / "aging.toml"
        plan.write_text(AGING_PLAN.format(fs="ext4", workloads='["git"]', pulls=4, every=2)
                        + f'repo_url = "{url}"\n')
        run_fslab("run", str(plan), "--results", str(out), "--workdir", str(tmp_path / "w"),
                  env=env)
        said = json.loads(_db(out).execute("SELECT environment FROM runs").fetchone()[0])[
            "workloads"]["aging:git"]
        report = run_fslab("report", "--results", str(out)).stdout
        if stands_in:
            assert said["history"].startswith("generated source tree (200 files")
            assert said["stand_in"].endswith(f"{url}: it could not be reached (fatal: '{tmp_path}"
                                             "/offline.git' does not appear to be a git "
                                             "repository)")
            assert f"measured: aging:git: a generated source history (200 files, seeded) " \
                   f"stood in for {url}: it could not" in " ".join(report.split())
        else:
            assert said["history"] == f"repository {url} (first-parent commits, oldest first)"
            assert said["stand_in"] is None and said["commits"] == 5
            assert "stood in" not in report
            assert _records(out, case="git")["successful_pulls"] == 4
    assert not _no_leftovers(tmp_path, state_dir)


def test_zfs_metadata_damage_follows_the_driver_unless_the_plan_says():
    # kernel OpenZFS answers EIO for a damaged directory; zfs-fuse 0.7 once deadlocked for
    # every user of its daemon: unset, the driver's metadata_damage_hangs_others decides
    from fslab import plan as plans
    from fslab.filesystems.base import Driver
    from fslab.filesystems.zfs import Zfs
    from fslab.workloads.integrity import IntegritySuite
    profile = plans.parse('[run]\nprofile = "smoke"\n', "t").profile
    for given, expected in ((None, None), (True, True), (False, False)):
        extra = {} if given is None else {"zfs_metadata": given}
        spec = plans.SuiteSpec(kind="integrity", workloads=["metadata"], **extra)
        case = IntegritySuite().cases(spec, profile)[0]
        assert case.config["zfs_metadata"] is expected
    assert Driver.metadata_damage_hangs_others is False      # the kernel's filesystems
    assert isinstance(Zfs.__dict__["metadata_damage_hangs_others"], property)


@needs_root()
@pytest.mark.e2e
def test_one_round_of_integrity_ranks_zfs_above_ext4(state_dir, results, tmp_path):
    """Issue 26's acceptance: one round, 8 damaged blocks each. Compared per damaged block
    (pooled exact test), ext4's blocks returned silently separate it from zfs's caught ones,
    and recommend puts zfs first for data integrity (a best of 0 silent scores as the best)."""
    _run_all_done(results, tmp_path, "--fs", "ext4,zfs", "--suite", "integrity",
                  "--profile", "smoke", "--iterations", "1")
    out = tmp_path / "report.json"
    run_fslab("report", "--results", str(results), "--json", str(out))
    (silent,) = [v for v in json.loads(out.read_text())["verdicts"]
                 if v["metric"] == "silent" and v["case"] == "data"]
    assert silent["tiers"] == [["zfs"], ["ext4"]], silent
    assert silent["test"].startswith("Boschloo exact test on the damaged pooled over rounds")
    rec = json.loads(run_fslab("recommend", "--results", str(results), "-p", "data-integrity",
                               "--json").stdout)
    assert rec["first"] == ["zfs"], rec["ranking"]
    assert not _no_leftovers(tmp_path, state_dir)


def test_aging_tables_list_steps_in_their_order_and_rank_only_what_a_filesystem_does():
    """The S4 smoke run listed steps 0, 100, 25, 50, 75 (params sorted as text), ranked
    the cold-cache check (bytes of the tree left in memory: 0 B everywhere, "lower is
    better") and printed a layout score, a share of 0 to 1, as "0.964×"."""
    import pandas as pd
    from fslab import metrics
    from fslab.analysis import analyze
    from fslab.metrics.format import human
    from fslab.records import canonical_params
    rows = [{"run_id": "r", "host": "h", "fs": fs, "variant": "default", "suite": "aging",
             "case": "git", "params": canonical_params({"every": 25, "step": step}),
             "iteration": 1, "metric": "grep_cost_aged", "value": v, "unit": "s/GB",
             "better": "lower"}
            for step in (0, 25, 50, 75, 100) for fs, v in (("ext4", 5.0 + step), ("xfs", 6.0))]
    a = analyze(pd.DataFrame(rows), regression=False)
    assert [json.loads(p)["step"] for p in a.tiers["params"]] == [0, 25, 50, 75, 100]
    assert [json.loads(p)["step"] for p in pd.unique(a.summary["params"])] == [0, 25, 50, 75, 100]
    assert metrics.better("cold_cache_resident_aged", "aging") is None
    assert human(0.964, metrics.find("layout_score_aged", "aging").unit) == "0.964"
