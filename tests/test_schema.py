"""Every JSON document fslab writes leads with "fslab" and "schema" (fslab/schema.py,
docs/formats.md); every reader of one refuses a newer schema in one line and still reads
today's and the unversioned ones before it."""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import orjson
import pytest

from conftest import fslab_in_process
from fslab import __version__, schema
from fslab.decide.result import Decision, stored_decisions
from fslab.errors import FslabError
from fslab.records import Measurement, Record, UnitKey, stamp
from fslab.store import Store, open_store
from fslab.store.environment import RunEnvironment

DECIDE_V1 = Path(__file__).parent / "data" / "decide-v1"   # a store of the unversioned fslab
DECIDE_V1_RUN = "20261128-055953-6975"
PLAN = '[run]\nprofile = "smoke"\n[[suite]]\nkind = "fio"\nworkloads = ["randread"]\n'


def _leads_with_its_version(doc: dict, kind: str) -> None:
    assert list(doc)[:2] == ["fslab", "schema"], list(doc)[:4]
    assert doc["fslab"] == __version__ and doc["schema"] == schema.SCHEMAS[kind]


def _one_line_refusal(message: str, kind: str, found: int) -> None:
    assert "\n" not in message
    assert message.endswith(f": {kind} schema {found} is newer than this fslab reads "
                            f"({schema.SCHEMAS[kind]}); upgrade fslab"), message


def _run(store: Store, iops: list[float], env: dict | None = None) -> str:
    """A finished run of fio randread records on ext4 and xfs, one per round."""
    run_id = store.create_run(PLAN, env or {"hostname": "box", "kernel": "6.1"},
                              source="test", status="finished", command="test")
    store.add_records(
        Record(run_id, "localhost", fs, "default", "fio", "randread", '{"workload":"randread"}',
               it, "read_iops", value * speed, "ops/s", "higher", None, 0.0)
        for it, value in enumerate(iops, 1) for fs, speed in (("ext4", 1.0), ("xfs", 0.9)))
    return run_id


def _newer(store: Store, run_id: str, patch: dict) -> None:
    """The run's stored environment as a newer fslab would have written it."""
    store.update_environment(run_id, patch)


# --- the module ---------------------------------------------------------------------------

def test_stamp_leads_with_the_version_and_check_reads_what_it_knows():
    doc = schema.stamp("compare", {"rows": [], "schema": 99, "fslab": "old"})
    assert doc == {"fslab": __version__, "schema": 2, "rows": []}
    assert schema.check("compare", doc, "x") == 2
    assert schema.check("compare", {"rows": []}, "x") == 1          # before documents had one
    assert schema.check("decision", {"schema_version": 2}, "x") == 2  # the decision's old key
    with pytest.raises(FslabError) as e:
        schema.check("report", {"schema": 2}, "r.json")
    assert str(e.value) == "r.json: report schema 2 is newer than this fslab reads (1); upgrade fslab"


# --- the run environment ------------------------------------------------------------------

def test_a_new_runs_environment_says_which_fslab_wrote_it(tmp_path):
    store = Store(tmp_path)
    run_id = store.create_run(PLAN, {"hostname": "box"})
    stored = store.run(run_id)["environment"]
    _leads_with_its_version(stored, "environment")
    assert stored["hostname"] == "box"
    store.update_environment(run_id, {"adaptive": {"rounds": 3}})   # later steps keep it
    _leads_with_its_version(store.run(run_id)["environment"], "environment")


def test_a_newer_environment_is_refused_in_one_line_by_the_store_and_the_report(tmp_path):
    store = Store(tmp_path)
    run_id = _run(store, [100.0, 101.0, 102.0])
    _newer(store, run_id, {"schema": 2})
    with pytest.raises(FslabError) as e:
        store.run(run_id)
    _one_line_refusal(str(e.value), "environment", 2)
    assert str(e.value).startswith(f"{store.path} run {run_id}:")
    report = fslab_in_process("report", run_id, "--results", str(tmp_path), check=False)
    assert report.returncode == 2 and report.stdout == ""     # read as the run id is: input
    _one_line_refusal(report.stderr.strip().removeprefix("error: "), "environment", 2)
    with pytest.raises(FslabError) as e:
        RunEnvironment.from_json(b'{"schema": 7}', "guest.sqlite run g")
    assert str(e.value).startswith("guest.sqlite run g: environment schema 7")


def test_environments_of_today_and_before_the_version_still_read(tmp_path):
    shutil.copy(DECIDE_V1 / "fslab.sqlite", tmp_path / "fslab.sqlite")
    old = open_store(tmp_path).run(DECIDE_V1_RUN)["environment"]
    assert "schema" not in old and schema.check("environment", old, "old") == 1
    assert RunEnvironment.of(old).kernel               # read as before
    now = Store(tmp_path / "now")
    run_id = now.create_run(PLAN, {"kernel": "6.1"})
    assert RunEnvironment.of_run(now.run(run_id)).kernel == "6.1"
    assert RunEnvironment.from_json(orjson.dumps(now.run(run_id)["environment"])).kernel == "6.1"


def test_a_guest_store_of_a_newer_fslab_is_refused_before_anything_is_merged(tmp_path):
    from fslab.guest.merge import merge
    guest = Store(tmp_path / "guest")
    grun = guest.create_run("[run]\n", {})
    key = UnitKey("localhost", "f2fs", "default", "fio", "randread", "{}", 1)
    rel = f"runs/{grun}/{key.slug()}"
    (guest.root / rel).mkdir(parents=True)
    rec = stamp(key, grun, Measurement("read_iops", 1.0, "ops/s", "higher", f"{rel}/fio.json"))
    guest.finish_unit(grun, key, [rec], "done", None, time.time(), rel)
    _newer(guest, grun, {"schema": 2})
    guest.close()
    host = Store(tmp_path / "host")
    run_id = host.create_run("[run]\n", {})
    with pytest.raises(FslabError) as e:
        merge(host, run_id, tmp_path / "guest", "guest-tcg")
    _one_line_refusal(str(e.value), "environment", 2)
    assert host.units(run_id) == [] and host.records(run_id).empty
    assert not (host.run_dir(run_id) / "guest-tcg").exists()


# --- the decision -------------------------------------------------------------------------

def _decision(tmp_path) -> tuple[Store, dict]:
    shutil.copy(DECIDE_V1 / "fslab.sqlite", tmp_path / "fslab.sqlite")
    store = open_store(tmp_path)
    return store, store.run(DECIDE_V1_RUN)


def test_a_decisions_json_says_its_fslab_and_schema(tmp_path):
    [dec] = stored_decisions([_decision(tmp_path)[1]])
    now = dec.to_json()
    _leads_with_its_version(now, "decision")
    assert now["schema_version"] == 2                  # what the fslab before "schema" reads
    assert Decision.from_json(now) == dec
    assert "fslab" not in dec.to_json(1) and "schema" not in dec.to_json(1)   # as stored then


def test_a_newer_decision_is_refused_in_one_line_where_it_is_read(tmp_path):
    store, run = _decision(tmp_path)
    [dec] = stored_decisions([run])
    newer = dec.to_json() | {"schema": 3, "schema_version": 3}
    with pytest.raises(FslabError) as e:
        Decision.from_json(newer)
    _one_line_refusal(str(e.value), "decision", 3)
    store.update_environment(DECIDE_V1_RUN, {"decide": {"decision": newer}})
    with pytest.raises(FslabError) as e:
        stored_decisions([store.run(DECIDE_V1_RUN)])
    assert str(e.value).startswith(f"run {DECIDE_V1_RUN}'s decision: decision schema 3")
    report = fslab_in_process("report", DECIDE_V1_RUN, "--results", str(tmp_path), check=False)
    assert report.returncode == 1
    _one_line_refusal(report.stderr.strip().removeprefix("error: "), "decision", 3)


# --- the commands' JSON -------------------------------------------------------------------

@pytest.fixture
def two_runs(tmp_path):
    store = Store(tmp_path / "res")
    a = _run(store, [100.0, 101.0, 102.0, 103.0, 104.0])
    b = _run(store, [80.0, 81.0, 82.0, 83.0, 84.0])
    return str(tmp_path / "res"), a, b


def test_report_json_says_its_fslab_and_schema(two_runs, tmp_path):
    results, a, _ = two_runs
    fslab_in_process("report", a, "--results", results, "--json", str(tmp_path / "r.json"))
    doc = json.loads((tmp_path / "r.json").read_text())
    _leads_with_its_version(doc, "report")
    assert doc["run"] == a and doc["verdicts"]


def test_compare_json_is_an_object_with_its_rows(two_runs):
    results, a, b = two_runs
    doc = json.loads(fslab_in_process("compare", a, b, "--results", results, "--json").stdout)
    _leads_with_its_version(doc, "compare")
    assert {r["metric"] for r in doc["rows"]} == {"read_iops"}
    assert {(r["baseline"], r["other"]) for r in doc["rows"]} == {(a, b)}


def test_recommend_json_says_its_fslab_and_schema(two_runs):
    results, a, _ = two_runs
    doc = json.loads(fslab_in_process("recommend", a, "--priorities", "random-io", "--json",
                                      "--results", results).stdout)
    _leads_with_its_version(doc, "recommend")
    assert doc["priorities"] == "random-io" and "ranking" in doc


def test_features_json_says_its_fslab_and_schema():
    doc = json.loads(fslab_in_process("features", "--fs", "ext4,xfs", "--json").stdout)
    _leads_with_its_version(doc, "features")


def test_dry_run_json_says_its_fslab_and_schema(tmp_path):
    doc = json.loads(fslab_in_process("run", "--fs", "ext4", "--suite", "fio", "--profile",
                                      "smoke", "--dry-run", "--json",
                                      "--results", str(tmp_path / "r")).stdout)
    _leads_with_its_version(doc, "dry-run")
    assert doc["cases"] and not (tmp_path / "r").exists()       # a dry run creates nothing



def test_list_json_is_an_object_with_its_runs(two_runs, tmp_path):
    results, a, b = two_runs
    doc = json.loads(fslab_in_process("list", "--results", results, "--json").stdout)
    _leads_with_its_version(doc, "list")
    assert [r["run_id"] for r in doc["runs"]] == [a, b]
    empty = json.loads(fslab_in_process("list", "--results", str(tmp_path / "none"),
                                        "--json").stdout)
    _leads_with_its_version(empty, "list")
    assert empty["runs"] == [] and not (tmp_path / "none").exists()


def test_options_json_is_an_object_with_its_options():
    doc = json.loads(fslab_in_process("options", "ext4", "--json").stdout)
    _leads_with_its_version(doc, "options")
    assert {o["filesystem"] for o in doc["options"]} == {"ext4"}


def test_doctor_json_says_its_fslab_and_schema():
    doc = json.loads(fslab_in_process("doctor", "--json").stdout)
    _leads_with_its_version(doc, "doctor")
    assert "ext4" in doc["filesystems"]


def test_import_json_says_its_fslab_and_schema(tmp_path):
    fio = Path(__file__).parent / "data" / "fio-json" / "01_yardstick_fio-2.1.3.json"
    (tmp_path / "in" / "ext4").mkdir(parents=True)
    shutil.copy(fio, tmp_path / "in" / "ext4" / "job.json")
    out = fslab_in_process("import", str(tmp_path / "in"), "--results", str(tmp_path / "r"),
                           "--json").stdout
    doc = json.loads(out.strip().splitlines()[-1])
    _leads_with_its_version(doc, "import")
    assert doc["files"] == 1 and doc["records"] > 0
    # the run it made has a versioned environment like any other
    _leads_with_its_version(Store(tmp_path / "r").run(doc["run_id"])["environment"], "environment")
