"""`fslab run --dry-run [--json]`: the plan expanded with exact options and a duration
estimate, and nothing created (no run row, no results store, no image)."""
from __future__ import annotations

import json
from pathlib import Path

from conftest import fslab_in_process
from fslab.plan.profiles import GiB, parse_size

PLANS = Path(__file__).resolve().parents[1] / "plans"


def test_dry_run_json_lists_every_unit_with_its_fio_options(tmp_path, state_dir):
    results = tmp_path / "results"
    p = fslab_in_process("run", str(PLANS / "s2-fio-stats.toml"), "--profile", "paper", "--dry-run",
                         "--json", "--results", str(results))
    o = json.loads(p.stdout)
    assert o["profile"] == "paper" and o["page_cache"] == "on"
    fs = o["filesystems"]
    assert o["units"] == len(o["cases"]) * o["iterations"]
    assert {c["filesystem"] for c in o["cases"]} <= set(fs)
    randread = [c for c in o["cases"] if c["case"] == "randread"]
    assert len(randread) == len(fs)
    opts = randread[0]["fio_options"]
    assert opts["rw"] == "randread" and opts["runtime"] == "60" and opts["ioengine"] == "sync"
    # every case has an estimate from its options: runtime 60 s at least, times the rounds
    assert all(c["seconds_each"] >= 60 for c in o["cases"])
    assert o["estimate_seconds"] >= 60 * o["units"]
    assert not results.exists()   # a dry run creates nothing


def test_dry_run_uses_earlier_units_of_the_store_and_says_unknown_otherwise(tmp_path, state_dir):
    from fslab.store import open_store
    results = tmp_path / "results"
    store = open_store(results)
    plan = PLANS / "s4-aging.toml"
    first = json.loads(fslab_in_process("run", str(plan), "--profile", "smoke", "--fs", "ext4",
                                        "--dry-run", "--json", "--results", str(results)).stdout)
    case = first["cases"][0]
    assert case["seconds_each"] is None and case["estimate_from"].startswith("unknown")
    assert first["cases_without_estimate"] == len(first["cases"])
    # a finished unit of the same case in an earlier smoke run: its duration is the estimate
    from fslab.records import UnitKey, canonical_params
    run_id = store.create_run("", {}, profile="smoke")
    key = UnitKey("localhost", "ext4", "default", case["suite"], case["case"],
                  canonical_params(case["params"]), 1)
    import time
    store.finish_unit(run_id, key, [], "done", None, started=time.time() - 42, artifact_dir=None)
    second = json.loads(fslab_in_process("run", str(plan), "--profile", "smoke", "--fs", "ext4",
                                         "--dry-run", "--json", "--results", str(results)).stdout)
    again = next(c for c in second["cases"] if c["case"] == case["case"])
    assert 41.9 <= again["seconds_each"] <= 43 and again["estimate_from"].startswith("median")


def test_dry_run_text_names_the_options_and_the_duration(tmp_path, state_dir):
    p = fslab_in_process("run", "--fs", "ext4,xfs", "--suite", "fio", "--profile", "smoke", "-n", "2",
                         "--dry-run", "--results", str(tmp_path / "r"))
    assert "28 units" in p.stdout and "ext4 fio:randread" in p.stdout
    assert "direct=1 added" in p.stdout and "estimated duration:" in p.stdout
    assert "rw=randread" in p.stdout


def test_dry_run_of_s0_at_paper_shows_the_studys_protocol(tmp_path, state_dir):
    """Direct I/O for the libaio jobs, numjobs 1..16, each job in its own region of the
    shared file, iodepth 16 and 128 in Test 1, and one pass as the study ran."""
    o = json.loads(fslab_in_process("run", str(PLANS / "s0-onboard.toml"), "--profile", "paper",
                                    "--dry-run", "--json", "--results", str(tmp_path / "r")).stdout)
    assert o["iterations"] == 1 and o["page_cache"] == "off"
    ext4 = [c for c in o["cases"] if c["filesystem"] == "ext4"]
    assert all(c["direct_io"].startswith("direct=1 where") for c in ext4)
    t2 = [c["fio_options"] for c in ext4 if c["case"] == "t2-read"]
    assert sorted({int(x["numjobs"]) for x in t2}) == list(range(1, 17))
    for x in t2:   # regions laid end to end fill the case's file exactly once
        n, per = int(x["numjobs"]), parse_size(x["size"])
        if n > 1:
            assert x["offset_increment"] == x["size"]
        assert per * n <= 10 * GiB
    assert {c["fio_options"]["iodepth"] for c in ext4 if c["case"] == "t1-randread"} == {"16", "128"}
    # the deviations from the document, listed before the cases (text) and in --json
    assert o["study_deviations"]["declared_in"] == "fslab/data/claims/s0.toml"
    assert any("end_fsync=1" in d for d in o["study_deviations"]["items"])
    text = fslab_in_process("run", str(PLANS / "s0-onboard.toml"), "--profile", "paper",
                            "--dry-run", "--results", str(tmp_path / "r")).stdout
    assert "deviations from the study document (fslab/data/claims/s0.toml" in text
    assert "100000 kB" in text and text.index("deviations from") < text.index("ext4 fio:t1-")


def test_dry_run_of_s2_at_paper_runs_the_notebooks_jobs_as_written(tmp_path, state_dir):
    """Per-job rows (no group_reporting: fslab sums the clones and keeps *_per_job), no
    end_fsync; --fio end_fsync=1 gives the corrected protocol, at paper too."""
    def cases(*extra):
        o = json.loads(fslab_in_process("run", str(PLANS / "s2-fio-stats.toml"), "--profile", "paper",
                                        "--fs", "ext4", "--dry-run", "--json", *extra,
                                        "--results", str(tmp_path / "r")).stdout)
        return {c["case"]: c["fio_options"] for c in o["cases"]}
    paper = cases()
    assert {o["group_reporting"] for o in paper.values()} == {"0"}
    assert paper["randwrite"]["end_fsync"] == "0" and paper["mixed"]["end_fsync"] == "0"
    assert cases("--fio", "end_fsync=1")["randwrite"]["end_fsync"] == "1"


def test_fio_options_typed_on_the_command_line_run_as_typed_at_any_profile(tmp_path, state_dir):
    """The profile scales a plan's values (S2's runtime=60 -> 1 s at smoke), never what the
    user typed: --fio runtime=4 runs 4 s at smoke, from the command line or over a plan."""
    def runtimes(*args):
        o = json.loads(fslab_in_process("run", *args, "--fs", "ext4", "--profile", "smoke", "--dry-run",
                                        "--json", "--results", str(tmp_path / "r")).stdout)
        return {c["fio_options"]["runtime"] for c in o["cases"]}
    assert runtimes("--suite", "fio") == {"1"}
    assert runtimes("--suite", "fio", "--fio", "runtime=4") == {"4"}
    assert runtimes(str(PLANS / "s2-fio-stats.toml")) == {"1"}
    assert runtimes(str(PLANS / "s2-fio-stats.toml"), "--fio", "runtime=4") == {"4"}


def test_too_few_rounds_for_any_verdict_is_said_before_the_run(tmp_path, state_dir):
    o = json.loads(fslab_in_process("run", str(PLANS / "s0-onboard.toml"), "--profile", "paper",
                                    "--dry-run", "--json", "--results", str(tmp_path / "r")).stdout)
    assert o["too_few_rounds"].startswith("1 round per filesystem cannot separate 3 filesystems")
    assert "--iterations 3 or more" in o["too_few_rounds"]
    quick = json.loads(fslab_in_process("run", "--fs", "ext4,xfs", "--profile", "quick", "--dry-run",
                                        "--json", "--results", str(tmp_path / "r")).stdout)
    assert quick["too_few_rounds"] is None   # 5 rounds separate 2 filesystems


def test_dry_run_of_s4_at_paper_shows_the_reported_configuration(tmp_path, state_dir):
    o = json.loads(fslab_in_process("run", str(PLANS / "s4-aging.toml"), "--profile", "paper", "--fs",
                                    "ext4", "--dry-run", "--json", "--results", str(tmp_path / "r")).stdout)
    git = next(c for c in o["cases"] if c["case"] == "git")
    assert git["parameters"]["pulls"] == 5000 and git["parameters"]["every"] == 50
    assert git["parameters"]["stop_after"] == 393
    assert git["grep_at"].startswith("0 (the history's first commit on both, fresh: the noise "
                                     "floor) and every 50 successful pulls")
    # the image the units will use: the study's 7.43 GB partitions (7085M), not the
    # profile's 8 GiB minimum; the study's history is the Linux kernel's, fetched at paper
    assert git["image_bytes"] == parse_size("7085M")
    assert git["parameters"]["repo_url"].endswith("torvalds/linux.git")
    assert git["params"]["source"].endswith("linux.git else generated:20000")
    text = fslab_in_process("run", str(PLANS / "s4-aging.toml"), "--profile", "paper", "--fs", "ext4",
                     "--dry-run", "--results", str(tmp_path / "r")).stdout
    assert "[image 6.92 GiB;" in text and "8 GiB" not in text


def test_dry_run_says_when_an_image_is_sized_from_the_input(tmp_path, state_dir):
    o = json.loads(fslab_in_process("run", str(PLANS / "s4-aging.toml"), "--fs", "xfs,ext4",
                             "--dry-run", "--json", "--results", str(tmp_path / "r")).stdout)
    sizes = {(c["filesystem"], c["case"]): c["image_bytes"] for c in o["cases"]}
    # quick: the git image follows the generated history, known only when the unit runs;
    # churn's is 2 x 128 MiB, raised to what mkfs.xfs accepts (300 MiB), as Instance does
    assert sizes[("xfs", "git")] is None and sizes[("ext4", "churn")] == 256 * 2**20
    assert sizes[("xfs", "churn")] == 300 * 2**20
    tasks = json.loads(fslab_in_process("run", str(PLANS / "s3-fileserver.toml"), "--fs", "ext3",
                                 "--dry-run", "--json", "--results", str(tmp_path / "r")).stdout)
    assert tasks["cases"][0]["image_bytes"] == 20 * 10**9


def test_only_a_studys_suites_are_said_to_be_scaled_down_from_the_studies(tmp_path, state_dir):
    """`fslab run plans/databases.toml` opened with 'profile quick (scaled down from the
    studies)': no study ran pgbench or SQLite. Said of a study's suites only (the fio suite's
    S2 jobs), never of a database, a replay or the user's own job files."""
    apps = fslab_in_process("run", str(PLANS / "databases.toml"), "--dry-run", "--results",
                            str(tmp_path / "r"))
    assert "profile quick;" in apps.stdout and "scaled down from the studies" not in apps.stdout
    o = json.loads(fslab_in_process("run", str(PLANS / "databases.toml"), "--dry-run", "--json",
                                    "--results", str(tmp_path / "r")).stdout)
    assert o["scaled"] is False
    (tmp_path / "mine.fio").write_text("[a]\nrw=randread\nsize=8m\n")
    mine = fslab_in_process("run", "--fs", "ext4", "--job", str(tmp_path / "mine.fio"), "--dry-run",
                            "--results", str(tmp_path / "r"))
    assert "scaled down from the studies" not in mine.stdout
    fio = fslab_in_process("run", "--fs", "ext4", "--suite", "fio", "--dry-run", "--results",
                           str(tmp_path / "r"))
    assert "profile quick (scaled down from the studies);" in fio.stdout
