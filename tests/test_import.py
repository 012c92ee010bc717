"""`fslab import`: the corpus, a synthetic S2 layout, and proof that S2's three mistakes
(one aggregate repeated per iteration, usec labelled ms, error from the wrong level)
cannot happen here."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from fslab.analysis import analyze
from fslab.fio.importer import import_path
from fslab.store.db import Store

from conftest import fslab_in_process
from corpus_data import CORPUS, FACTORS, S2_SOURCES, s2_layout



@pytest.fixture()
def store(tmp_path):
    s = Store(tmp_path / "results")
    yield s
    s.close()


def test_corpus_imports_and_unreadable_files_get_one_line(store):
    lines = []
    res = import_path(store, CORPUS, log=lines.append)
    assert res.files == 33 and res.records > 500
    assert sorted(Path(p).name for p, _ in res.skipped) == ["13_ocs-ci_fio-3.7.json", "35_fio-plot_none.txt"]
    assert len(lines) == 2 and all(line.startswith("skipped ") and "\n" not in line for line in lines)
    run = store.run(res.run_id)
    assert run["status"] == "imported" and run["source"] == f"import:{CORPUS}"
    assert run["environment"]["import"]["files"] == 33
    recs = store.records(res.run_id)
    # raw copies are kept under runs/<run_id>/ and every record points at its own
    for artifact in recs["artifact"].unique():
        assert artifact.startswith(f"runs/{res.run_id}/raw/") and (store.root / artifact).is_file()
    # client/server output: one host per fio server, the aggregate as 'all-clients'
    pbench = recs[recs["artifact"].str.endswith("11_pbench_fio-3.7.txt")]
    assert set(pbench["host"]) == {"perf36", "perf84", "all-clients"}
    # numjobs without group_reporting: the 4 clones are one value per file, their sum
    storperf = recs[recs["artifact"].str.endswith("04_storperf_fio-2.1.11.json")]
    clones = storperf[storperf["metric"] == "clones"]
    assert list(clones["value"]) == [4.0]
    assert not any("job_instance" in p for p in storperf["params"])
    # job names shared by unrelated files are told apart by file
    fiojob = recs[recs["case"] == "FIOJOB"]
    assert len({json.loads(p)["file"] for p in fiojob["params"]}) == 2


def test_s2_layout_keeps_every_iteration(store, tmp_path):
    expected = s2_layout(tmp_path / "s2")
    res = import_path(store, tmp_path / "s2", log=lambda line: None)
    assert res.files == 30 and not res.skipped
    recs = store.records(res.run_id)
    assert set(recs["fs"]) == set(FACTORS) and set(recs["case"]) == set(S2_SOURCES)
    assert set(recs["iteration"]) == {1, 2, 3} and set(recs["params"]) == {"{}"}
    # mistake 1 (S2 aggregated, then repeated one row per iteration): here each row is
    # its own iteration's file, and the per-iteration table shows them all distinct
    table = analyze(recs, regression=False).per_iteration()
    assert len(table) == 2 * 5 * 3
    for (fs, job, it, d), iops in expected.items():
        if iops:
            row = table[(table["level"] == fs) & (table["case"] == job) & (table["iteration"] == it)]
            assert row[f"{d}_iops [ops/s]"].item() == pytest.approx(iops)
    per_job = table.groupby(["level", "case"])["read_iops [ops/s]"].nunique()
    assert (per_job[per_job.index.get_level_values("case") != "randwrite"] == 3).all()
    # imported iterations are rounds: each pair is compared within them (the test the
    # design gives: t on the log ratios, or the exact sign-flip test where they do not vary)
    from fslab.analysis.pairwise import BLOCKED_DIFF, BLOCKED_LOG, MANN_WHITNEY, SIGN_FLIP
    pairs = analyze(recs, regression=False).pairs
    assert pairs["matched"].all()
    # (Mann-Whitney only for a value that is the same every round: a deterministic quantity)
    assert set(pairs["test"]) <= {BLOCKED_LOG, BLOCKED_DIFF, SIGN_FLIP, MANN_WHITNEY}


def test_latency_units_are_what_the_column_says(store, tmp_path):
    # mistake 2 (usec labelled ms): fio 2.x usec and 3.x ns both end up in ns
    s2_layout(tmp_path / "s2")
    recs = store.records(import_path(store, tmp_path / "s2", log=lambda line: None).run_id)
    lat = recs[recs["metric"].str.contains("lat")]
    assert set(lat["unit"]) == {"ns"}
    v2 = recs[(recs["case"] == "randread") & (recs["metric"] == "read_clat_mean")]["value"]
    assert set(v2) == {97.84 * 1000}                     # 97.84 usec in the fio 2.1.3 file
    raw3 = json.loads((CORPUS / S2_SOURCES["seqread"]).read_text())["jobs"][0]["read"]["clat_ns"]["mean"]
    v3 = recs[(recs["case"] == "seqread") & (recs["metric"] == "read_clat_mean")]["value"]
    assert set(v3) == {raw3}


def test_error_code_comes_from_its_own_job(store, tmp_path):
    # mistake 3 (errors from the wrong JSON level): one failing job among twelve
    doc = json.loads((CORPUS / "19_kbench_fio-3.16.json").read_text())
    doc["jobs"][3]["error"] = 5
    doc["error"] = 99                     # a top-level decoy that must not be used
    (tmp_path / "ext4").mkdir()
    (tmp_path / "ext4" / "kbench.json").write_text(json.dumps(doc))
    recs = store.records(import_path(store, tmp_path / "ext4" / "kbench.json", log=lambda line: None).run_id)
    errors = recs[recs["metric"] == "error"].set_index("case")["value"]
    assert errors[doc["jobs"][3]["jobname"]] == 5
    assert (errors.drop(doc["jobs"][3]["jobname"]) == 0).all() and len(errors) == 12


def test_cli_import_report_compare(tmp_path):
    s2_layout(tmp_path / "s2")
    shutil.copy(CORPUS / "35_fio-plot_none.txt", tmp_path / "s2" / "ext4" / "broken.json")
    results = str(tmp_path / "results")
    first = fslab_in_process("import", str(tmp_path / "s2"), "--results", results, "--json")
    out = json.loads(first.stdout.strip().splitlines()[-1])
    assert out["files"] == 30 and out["skipped"][0]["path"].endswith("broken.json")
    second = fslab_in_process("import", str(tmp_path / "s2"), "--results", results, check=False)
    assert second.returncode == 0 and "btrfs" in second.stdout and "imported 30 file(s)" in second.stdout
    second_id = second.stdout.split()[1].rstrip(":")
    cmp = fslab_in_process("compare", out["run_id"], second_id, "--results", results, "--json")
    pairs = json.loads(cmp.stdout)["rows"]
    assert {p["test"] for p in pairs} == {"Mann-Whitney U"}     # two runs: unpaired
    assert {(p["baseline"], p["other"]) for p in pairs} == {(out["run_id"], second_id)}
    assert not any(p["significant"] for p in pairs)             # same files: no difference
    fslab_in_process("report", out["run_id"], "--results", results,
                     "--csv", str(tmp_path / "csv"), "--markdown", str(tmp_path / "r.md"))
    assert (tmp_path / "csv" / "per_iteration.csv").is_file()
    tiers_csv = pd.read_csv(tmp_path / "csv" / "tiers.csv")      # every level's tier, ratio to best
    assert not (tmp_path / "csv" / "leaders.csv").exists()
    # each (workload, metric) lists its best level first, at ratio 1 in tier 1
    firsts = tiers_csv.groupby(["case", "params", "metric"], sort=False, dropna=False).head(1)
    assert len(firsts) > 1 and (firsts["tier"] == 1).all() and (firsts["ratio_to_best"] == 1.0).all()
    assert tiers_csv["level"].nunique() >= 2 and (tiers_csv["tier"] >= 1).all()
    assert "| workload |" in (tmp_path / "r.md").read_text()
