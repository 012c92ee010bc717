"""'The study said -> here': claims from fslab/data/claims re-derived from records.

Unit tests feed tidy records (the store's columns) straight to the claims module;
the e2e test runs the S3 plan at smoke on ext3 and xfs and reads `report --json`.
"""
from __future__ import annotations

import json

import pandas as pd
import pytest

from fslab.report.claims import VERDICTS, claims_json, load_claims


def rec(fs, case, metric, values, unit="s", variant="default", suite="tasks"):
    return [{"run_id": "r", "host": "localhost", "fs": fs, "variant": variant, "suite": suite,
             "case": case, "params": "{}", "iteration": i + 1, "metric": metric, "value": v,
             "unit": unit, "better": "lower", "artifact": None, "ts": 0.0}
            for i, v in enumerate(values)]


def by_claim(rows):
    return {r["claim"]: r for r in rows}


def test_every_claim_file_loads_and_names_a_known_kind():
    claims = load_claims()
    assert {c.study for c in claims} >= {"S1", "S3"}
    assert {c.kind for c in claims} <= {"order", "change", "value"}


def test_order_claim_holds_reverses_and_needs_enough_rounds():
    five_fast, five_slow = [1.0, 1.1, 1.2, 1.05, 1.15], [2.0, 2.1, 2.2, 2.05, 2.15]
    df = pd.DataFrame(rec("xfs", "05-remove-isos", "elapsed", five_fast)
                      + rec("ext3", "05-remove-isos", "elapsed", five_slow)
                      + rec("xfs", "06-copy-tree", "elapsed", five_slow)      # ext3 faster: holds
                      + rec("ext3", "06-copy-tree", "elapsed", five_fast)
                      + rec("xfs", "09-ls-R", "elapsed", five_slow)           # xfs slower: reversed
                      + rec("ext3", "09-ls-R", "elapsed", five_fast)
                      + rec("xfs", "10-find", "elapsed", [1.0, 2.0])          # 2+2 rounds
                      + rec("ext3", "10-find", "elapsed", [3.0, 4.0]))
    rows = by_claim(claims_json({"environment": {}}, df))
    assert rows["ISO removal: XFS is about 100x faster than ext3"]["verdict"] == "holds"
    assert rows["Tree copy: ext3 is faster than XFS"]["verdict"] == "holds"
    assert rows["ls -R: XFS is faster than ext3"]["verdict"] == "reversed"
    few = rows["find: XFS is faster than ext3"]
    assert few["verdict"] == "no significant difference" and "too few" in few["why"]
    assert rows["ISO copy: JFS is faster than ext3"]["verdict"] == "not comparable"
    assert "jfs not run" in rows["ISO copy: JFS is faster than ext3"]["why"]
    assert set(rows["Tree copy: ext3 is faster than XFS"]) == {"study", "claim", "published",
                                                               "measured", "verdict", "why"}


def test_capacity_claims_are_decisive_without_noise_and_shown_to_001_percent():
    df = pd.DataFrame(rec("xfs", "02-mount", "capacity_initial", [99.95, 99.95], "%")
                      + rec("ext3", "02-mount", "capacity_initial", [92.77, 92.77], "%")
                      + rec("ext3", "08-remove-trees", "capacity_residual", [92.77, 92.77], "%")
                      + rec("xfs", "08-remove-trees", "capacity_residual", [99.93, 99.93], "%")
                      + rec("xfs", "03-copy-iso", "elapsed", [1.0, 1.0]))
    rows = by_claim(claims_json({"environment": {}}, df))
    cap = rows["Capacity after mkfs: XFS leaves more of the partition to users than ext3"]
    assert cap["verdict"] == "holds" and "99.95%" in cap["measured"] and "92.77%" in cap["measured"]
    assert rows["ext3 gets all its capacity back once every file is removed"]["verdict"] == "holds"
    assert rows["XFS loses a little capacity after the files are removed"]["verdict"] == "holds"


def test_zfs_fuse_speed_claims_are_not_comparable_but_space_claims_are():
    df = pd.DataFrame(rec("zfs", "dedup", "zpool_dedupratio", [1.98, 1.99], "ratio", "dedup", "dedup")
                      + rec("zfs", "dedup", "setup_time", [9.0, 9.5], "s", "dedup", "dedup")
                      + rec("ext4", "dedup", "setup_time", [3.0, 3.1], "s", "default", "dedup"))
    env = {"zfs implementation": "zfs-fuse 0.7.0 (FUSE daemon)"}
    rows = by_claim(claims_json({"environment": env}, df))
    dedup = rows["ZFS dedup stores the half-duplicated tree in about half the space (DEDUP about 2x)"]
    assert dedup["verdict"] in VERDICTS and dedup["verdict"] != "not comparable"
    speed = rows["Dedup costs setup time: ext4 builds the dedup tree sooner than ZFS with dedup"]
    assert speed["verdict"] == "not comparable" and "zfs-fuse" in speed["why"]


@pytest.mark.e2e
@pytest.mark.needs_root
def test_s3_smoke_on_ext3_and_xfs_reports_claims(tmp_path):
    from conftest import run_fslab
    results = tmp_path / "results"
    run_fslab("run", "plans/s3-fileserver.toml", "--profile", "smoke", "--fs", "ext3,xfs",
              "--results", str(results), timeout=900)
    out = tmp_path / "report.json"
    run_fslab("report", "--json", str(out), "--results", str(results))
    claims = [c for c in json.loads(out.read_text())["claims"] if c["study"] == "S3"]
    judged = [c for c in claims if c["verdict"] in VERDICTS and c["measured"] != "–"]
    assert len(judged) >= 5, claims
