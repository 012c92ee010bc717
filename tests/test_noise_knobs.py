"""The knobs bench/noise measures: how a unit's loop image is held and whether the machine is
settled before it (fslab/targets/loop.py, fslab/system/settle.py, [run] in a plan)."""
from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from conftest import leftovers, needs_root, run_fslab
from fslab.plan import Plan, RunSection
from fslab.plan.profiles import PROFILES
from fslab.system import settle as settle_mod


def test_a_plan_takes_the_profiles_image_and_settle_unless_it_names_its_own():
    for name, profile in PROFILES.items():
        plan = Plan(run=RunSection(profile=name))
        assert (plan.image, plan.settle) == (profile.image, profile.settle)
    plan = Plan(run=RunSection(profile="quick", image="fresh", settle=False))
    assert (plan.image, plan.settle) == ("fresh", False)
    plan = Plan(run=RunSection(profile="smoke", image="reused", settle=True))
    assert (plan.image, plan.settle) == ("reused", True)
    with pytest.raises(ValueError):
        RunSection(image="preallocated")


def test_dirty_kib_reads_dirty_and_writeback_from_meminfo():
    lines = Path("/proc/meminfo").read_text().splitlines()
    fields = {ln.split(":")[0]: int(ln.split()[1]) for ln in lines}
    # the kernel's own counters move between two reads: compare within a generous bound
    assert abs(settle_mod.dirty_kib() - (fields["Dirty"] + fields["Writeback"])) < 64 * 1024


def test_settle_waits_for_writeback_to_drain(tmp_path):
    with open(tmp_path / "dirty", "wb") as f:   # 32 MiB dirty in the page cache
        f.write(os.urandom(32 << 20))
    done = settle_mod.settle(limit_s=60)
    assert done.dirty_kib <= settle_mod.QUIET_KIB or done.seconds >= 60
    assert done.dropped == (os.geteuid() == 0)


@pytest.mark.e2e
@needs_root()
def test_a_reused_image_holds_every_units_filesystem_and_goes_at_the_end(state_dir, results,
                                                                          tmp_path):
    work = tmp_path / "work"
    plan = tmp_path / "plan.toml"
    plan.write_text('[run]\nprofile = "smoke"\niterations = 2\nimage = "reused"\nsettle = true\n'
                    '[[filesystem]]\nname = "ext4"\n[[filesystem]]\nname = "xfs"\n'
                    '[[suite]]\nkind = "fio"\nworkloads = ["randwrite"]\n')
    run_fslab("run", str(plan), "--results", str(results), "--workdir", str(work))
    db = sqlite3.connect(results / "fslab.sqlite")
    status = db.execute("SELECT status, COUNT(*) FROM units GROUP BY status").fetchall()
    assert status == [("done", 4)]
    env = json.loads(db.execute("SELECT environment FROM runs").fetchone()[0])
    assert env["units"] == {"settle": True, "image": "reused", "loop_direct_io": True,
                            "design": "sliced", "slice_ms": 250}
    # every unit's filesystem (ext4's and xfs's, both rounds) was made on the one image
    targets = [json.loads(p.read_text())["target"]
               for p in (results / "runs").rglob("filesystem.json")]
    assert len(targets) == 4
    assert {t["image"] for t in targets} == {"reused"}
    assert len({t["image_file"] for t in targets}) == 1
    assert targets[0]["image_file"].startswith("reused-")
    report = run_fslab("report", "--results", str(results))
    assert "every unit on one loop image written before the run" in report.stdout
    assert not list(work.glob("*.img"))          # gone at the run's end
    assert not leftovers(str(work))


def test_workdir_is_judged_by_its_filesystem_type_not_its_path(tmp_path):
    from fslab.errors import FslabError
    from fslab.run.validate import _check_workdir, fstype_of
    assert fstype_of(Path("/proc/self")) == "proc"
    with pytest.raises(FslabError, match="proc, a kernel pseudo-filesystem"):
        _check_workdir(Path("/proc/fslab-work"))
    if fstype_of(Path("/dev/shm")) == "tmpfs":   # a tmpfs holds images (in RAM), said
        _check_workdir(Path("/dev/shm"))
    _check_workdir(tmp_path)


def test_a_run_with_images_in_ram_says_so_before_any_number():
    from fslab.results.provenance import measured_where
    runs = [{"run_id": "r1", "environment": {"target": {"kind": "loop", "backing": {
        "source": "tmpfs", "fstype": "tmpfs"}}}},
            {"run_id": "r2", "environment": {"target": {"kind": "loop", "backing": {
                "source": "/dev/vda", "fstype": "ext4"}}}}]
    from fslab.store.environment import RunEnvironment
    lines = measured_where({r["run_id"]: RunEnvironment.of(r["environment"]) for r in runs})
    assert lines == ["run r1: loop images in RAM (tmpfs work directory): numbers from memory "
                     "and CPU, not from a disk"]


def _schedule(order: str | None):
    from fslab.plan import FilesystemSpec, SuiteSpec
    from fslab.run.schedule import Schedule
    return Schedule.of(Plan(run=RunSection(profile="quick", order=order), filesystem=[
        FilesystemSpec(name="ext4"), FilesystemSpec(name="xfs"), FilesystemSpec(name="btrfs")],
        suite=[SuiteSpec(kind="fio", workloads=["randread", "seqread", "mixed"])]))


def test_a_grouped_round_runs_each_cases_filesystems_back_to_back_in_a_drawn_order():
    s = _schedule("grouped")
    firsts, case_orders = set(), set()
    for it in range(1, 21):
        units = s.round(it)
        cases = [u.key.case for u in units]
        assert len(units) == 9 and len({(u.key.fs, u.key.case) for u in units}) == 9
        # each case's units are contiguous
        runs = [c for k, c in enumerate(cases) if k == 0 or cases[k - 1] != c]
        assert sorted(runs) == ["mixed", "randread", "seqread"], cases
        case_orders.add(tuple(runs))
        firsts |= {units[k].key.fs for k in range(0, 9, 3)}
        assert s.round(it) == units          # the same round again: the same order (resume)
    assert len(case_orders) > 1 and firsts == {"ext4", "xfs", "btrfs"}
    # a race's round of some pairs only (fslab decide) is grouped too
    some = [p for p in s.pairs if p[0].name != "btrfs"]
    cases = [u.key.case for u in s.round(7, some)]
    assert len([c for k, c in enumerate(cases) if k == 0 or cases[k - 1] != c]) == 3


def test_a_spread_round_shuffles_every_unit_as_before():
    s = _schedule("spread")
    grouped_every_time = all(
        len([c for k, c in enumerate(cs) if k == 0 or cs[k - 1] != c]) == 3
        for cs in ([u.key.case for u in s.round(it)] for it in range(1, 21)))
    assert not grouped_every_time


def test_steady_state_is_fios_window_judged_by_snias_two_rules():
    from fslab.fio.parse import job_measurements, load_fio_output, steady_state_of
    doc = load_fio_output((Path(__file__).parent / "data" / "fio-json" /
                           "27_fio-plot-results_fio-3.33.json").read_bytes(), "corpus")
    ss = doc["jobs"][0]["steadystate"]
    reached, spread, excursion = steady_state_of(ss)
    # fio's own criterion for this window is 7.462113% (its largest deviation from the mean)
    assert spread == pytest.approx(7.462113, abs=1e-4)
    assert reached and excursion < 10
    got = {m.metric: m.value for m in job_measurements(doc)[0].measurements}
    assert got["steady_state_reached"] == 1.0
    # a window that climbs 2% a second stays within 20% of its mean but its fitted line
    # rises 18%: fio would stop it, SNIA's second rule does not count it steady
    climbing = {"ss": "iops:20.000000%", "attained": 1,
                "data": {"iops": [1000 * (1 + 0.02 * k) for k in range(10)]}}
    reached, spread, excursion = steady_state_of(climbing)
    assert spread < 20 and excursion == pytest.approx(16.8, abs=0.5) and not reached
    assert steady_state_of({"ss": "iops:20%", "attained": 0, "data": {}}) is None


def test_the_standard_profile_runs_time_based_jobs_until_steady_and_smaller_ones_do_not():
    from fslab.plan import FilesystemSpec, SuiteSpec
    from fslab.run.schedule import Schedule

    def configs(profile, fio=None):
        plan = Plan(run=RunSection(profile=profile), filesystem=[FilesystemSpec(name="ext4")],
                    suite=[SuiteSpec(kind="fio", workloads=["randread", "seqwrite"],
                                     **({"fio": fio} if fio else {}))])
        return {c.name: c.config for _, _, cases in Schedule.of(plan).suite_cases for c in cases}
    std = configs("standard")
    assert std["randread"]["steadystate"] == "iops:20%" and std["seqwrite"]["steadystate"] == "bw:20%"
    assert (std["randread"]["ss_dur"], std["randread"]["ss_ramp"], std["randread"]["runtime"]) \
        == ("10s", "5s", "60")
    assert "steadystate" not in configs("quick")["randread"]
    assert "steadystate" not in configs("paper")["randread"]   # the study's fixed durations
    own = configs("standard", {"ss": "iops_slope:1%", "ss_dur": "30s"})
    assert own["randread"]["ss"] == "iops_slope:1%" and "steadystate" not in own["randread"]
