"""Plans (validation errors with file:line), the store's schema guard, and the scheduler's order."""
from __future__ import annotations

import sqlite3
from collections import Counter

from pathlib import Path

import pytest

from fslab import plan as plans
from fslab.errors import FslabError
from fslab.plan.profiles import PROFILES
from fslab.run.schedule import Schedule
from fslab.store import SCHEMA_VERSION, Store
from fslab.workloads.fio import FioSuite


def test_plan_error_names_file_line_and_field():
    text = '[run]\nprofile = "smoke"\n\n[[filesystem]]\nname = "ext4"\n\n[[filesystem]]\nname = "xfs"\nmkfs_options = "-f"\n'
    with pytest.raises(FslabError) as e:
        plans.parse(text, "my.toml")
    assert str(e.value).startswith("my.toml:9: filesystem.1.mkfs_options")


def test_unknown_key_is_rejected():
    with pytest.raises(FslabError, match="my.toml:2: run.itrations"):
        plans.parse("[run]\nitrations = 3\n", "my.toml")


def test_cli_plan_round_trips_through_toml():
    p = plans.from_cli(["ext4", "zfs:dedup"], ["fio"], "smoke", 3, 7, ["-b", "4096"], ["noatime"],
                       {"bs": "8k"})
    q = plans.parse(p.source_text)
    assert [(f.name, f.variant, f.mkfs_options, f.mount_options) for f in q.filesystem] == \
        [("ext4", "default", ["-b", "4096"], ["noatime"]), ("zfs", "dedup", ["-b", "4096"], ["noatime"])]
    assert q.iterations == 3 and q.run.seed == 7 and \
        q.suite[0].options == {"fio": {"bs": "8k"}, "unscaled": ["bs"]}   # --fio: as typed


@pytest.mark.parametrize("name", sorted(p.name for p in (Path(__file__).resolve().parents[1]
                                                          / "plans").glob("s*.toml")))
def test_every_shipped_plan_round_trips_through_toml(name):
    p = plans.load(Path(__file__).resolve().parents[1] / "plans" / name)
    q = plans.parse(plans.to_toml(p))
    assert q.model_dump() == p.model_dump()
    assert [s.model_extra for s in q.suite] == [s.model_extra for s in p.suite]


def test_hosts_and_target_survive_the_round_trip():
    text = ('[[filesystem]]\nname = "ext4"\n[[suite]]\nkind = "fio"\n[target]\nkind = "guest"\n'
            '[hosts]\nmode = "local"\n[[hosts.host]]\nname = "a b"\naddress = "127.0.0.2"\n')
    q = plans.parse(plans.to_toml(plans.parse(text)))
    assert q.hosts == {"mode": "local", "host": [{"name": "a b", "address": "127.0.0.2"}]}
    assert q.target == {"kind": "guest"}


def test_schema_version_mismatch_is_a_clear_error(tmp_path):
    Store(tmp_path).close()
    db = sqlite3.connect(tmp_path / "fslab.sqlite")
    db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION + 1),))
    db.commit()
    with pytest.raises(FslabError, match="upgrade fslab"):
        Store(tmp_path)


def test_rounds_are_interleaved_seeded_and_complete():
    p = plans.from_cli(["ext4", "xfs", "btrfs"], ["fio"], "smoke", 4, 42)
    units = Schedule.of(p).units("elsewhere")   # no availability judged: needs no root
    per_round = Counter(u.key.iteration for u in units)
    assert set(per_round.values()) == {21}     # every (fs, case) once per round (7 cases)
    for it in range(1, 5):
        rnd = [(u.key.fs, u.key.case) for u in units if u.key.iteration == it]
        assert len(set(rnd)) == 21
    orders = [[(u.key.fs, u.key.case) for u in units if u.key.iteration == it] for it in (1, 2)]
    assert orders[0] != orders[1]              # a new order each round
    again = Schedule.of(plans.from_cli(["ext4", "xfs", "btrfs"], ["fio"], "smoke", 4, 42)
                        ).units("elsewhere")
    assert [u.key for u in again] == [u.key for u in units]   # reproducible from the seed


def test_suites_that_write_files_skip_the_bare_device_with_a_reason():
    p = plans.from_cli(["ext4", "raw"], ["fio", "tasks", "capacity", "smallfiles"], "smoke", 1, 42)
    schedule = Schedule.of(p)   # no availability judged: needs no root
    pairs, notes = schedule.pairs, schedule.notes
    by_fs = Counter((spec.name, suite.name) for spec, suite, _ in pairs)
    assert {s for fs, s in by_fs if fs == "raw"} == {"fio"}
    assert {s for fs, s in by_fs if fs == "ext4"} == {"fio", "tasks", "capacity", "smallfiles"}
    assert "tasks skipped on raw: needs a filesystem (task 01 is mkfs)" in notes
    assert "capacity skipped on raw: has no filesystem to measure" in notes


def test_paper_profile_is_s2_exact_and_smoke_is_scaled():
    spec = plans.SuiteSpec(kind="fio")
    paper = {c.name: c.config for c in FioSuite().cases(spec, PROFILES["paper"])}
    assert paper["randread"] | {} == {**paper["randread"]}
    assert (paper["randread"]["size"], paper["randread"]["runtime"], paper["randread"]["ioengine"]) == \
        ("1048576k", "60", "sync")
    assert paper["mixed"]["rw"] == "randrw" and paper["mixed"]["rwmixread"] == "70"
    assert paper["seqread"]["bs"] == "1M" and paper["seqread"]["numjobs"] == "1"
    assert paper["seqwrite"]["end_fsync"] == "1" and "end_fsync" not in paper["seqread"]
    smoke = {c.name: c.config for c in FioSuite().cases(spec, PROFILES["smoke"])}
    assert smoke["randread"]["size"] == "32768k" and smoke["randread"]["runtime"] == "1"


def test_plan_options_override_and_sweeps_stay_distinct():
    spec = plans.SuiteSpec(kind="fio", workloads=["randread"],
                           fio={"ioengine": "libaio", "iodepth": 16},
                           sweep={"size": ["2G", "4G", "6G", "8G", "10G"], "numjobs": [1, 2]})
    cases = FioSuite().cases(spec, PROFILES["smoke"])
    assert len(cases) == 10
    assert all(c.config["ioengine"] == "libaio" and c.config["iodepth"] == "16" for c in cases)
    sizes = sorted({c.params["size"] for c in cases})
    assert len(sizes) == 5   # scaled proportionally, not all capped to the same size
    spec = plans.SuiteSpec(kind="fio", workloads=["seqwrite"], fio={"end_fsync": 0})
    assert FioSuite().cases(spec, PROFILES["smoke"])[0].config["end_fsync"] == "0"


def test_large_reads_split_over_two_processes_return_the_same_frame(tmp_path, monkeypatch):
    """Above forked.MIN_SIZE["store read"] a forked child reads the second half of the rows; the
    frame must be the one a single read gives: same rows, order, values and types. (The size
    that forks is lowered to this store's: what is compared does not depend on it.)"""
    from fslab.system import forked
    n = 1500
    store = Store(tmp_path / "results")
    rows = [(run, "localhost", fs, "default", "fio", f"case{i % 7}", "{}", i // 40, f"m{i % 5}",
             float(i) * 1.5, "ops/s", "higher" if i % 3 else None, f"runs/{run}/{i // 40}.json", 1.0)
            for run in ("r2", "r1") for fs in ("ext4", "xfs") for i in range(n)]
    store.add_rows(rows)
    monkeypatch.setitem(forked.MIN_SIZE, "store read", 2 * n)
    assert forked.worth_it("store read", 2 * n)
    split_all, split_one = store.records(), store.records("r1")
    monkeypatch.setitem(forked.MIN_SIZE, "store read", 10 ** 9)
    import pandas as pd
    pd.testing.assert_frame_equal(split_all, store.records())
    pd.testing.assert_frame_equal(split_one, store.records(["r1"]))
    assert len(split_all) == 4 * n and list(split_all["run_id"][:1]) == ["r2"]
    assert split_one["better"].isna().sum() == 2 * len(range(0, n, 3))   # NULL stays NaN
