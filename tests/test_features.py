"""Feature matrix: claims are complete and cited; every probe runs live on ext4, xfs, btrfs
and zfs at smoke size, lands in the store as a record, and tears down its image."""
from __future__ import annotations

import json
import sqlite3

import pytest

from conftest import fslab_in_process, leftovers, needs_root, run_fslab
from fslab.features.catalog import FEATURES
from fslab.features.feature_claims import FEATURE_CLAIMS, feature_claims_for
from fslab.workloads.probes import PROBES

FOUR = ("ext4", "xfs", "btrfs", "zfs")
PROBED = {f.key for f in FEATURES if f.probe}


@pytest.mark.parametrize("table", ["ext4", "xfs", "btrfs", "zfs", "zfs-fuse"])
def test_every_feature_has_a_cited_claim(table):
    claims = feature_claims_for(table.split("-")[0], table)
    assert set(claims) == {f.key for f in FEATURES}
    for key, c in claims.items():
        assert c.status in ("yes", "no", "partial"), (table, key)
        assert c.ref and c.note, (table, key)


def test_zfs_fuse_claims_differ_from_kernel_openzfs():
    fuse, kernel = FEATURE_CLAIMS["zfs-fuse"], FEATURE_CLAIMS["zfs"]
    # pool version 23 predates feature flags: no block cloning, embedded data or TRIM
    assert fuse["reflinks"].status == "no" and kernel["reflinks"].status == "partial"
    assert fuse["inline_small_files"].status == "no" and kernel["inline_small_files"].status == "yes"
    assert fuse["trim"].status == "no" and kernel["trim"].status == "yes"
    assert "lz4" not in fuse["compression"].note.split("(")[0]


def test_every_probed_feature_has_a_probe():
    assert {p.feature for p in PROBES.values()} == PROBED


def test_point_by_point_without_probes():
    p = fslab_in_process("features", "--fs", "ext4,zfs", "--markdown")
    text = p.stdout
    assert text.startswith("# ext4 vs zfs: point by point")
    for f in FEATURES:
        assert f"**{f.title}**" in text
    assert "advantage zfs" in text and "ext4(5)" in text


@needs_root()
def test_probes_on_four_filesystems(state_dir, results, tmp_path):
    p = run_fslab("features", "--probe", "--fs", ",".join(FOUR), "--json",
                  "--results", str(results), "--workdir", str(tmp_path / "work"))
    m = json.loads(p.stdout)
    assert m["implementations"]["zfs"] in ("zfs", "zfs-fuse")
    cells = {(c["fs"], c["feature"]): c for c in m["cells"]}
    for fs in FOUR:
        for key in PROBED:
            probe = cells[(fs, key)]["probe"]
            assert probe is not None, (fs, key)
            assert probe["outcome"] in ("works", "fails", "inconclusive"), (fs, key)
            assert probe["detail"], (fs, key)   # the reason is always given
            assert probe["artifacts"] and probe["probed"] == 1
    # what the kernel really does on these filesystems
    works = lambda fs, key: cells[(fs, key)]["probe"]["outcome"] == "works"
    assert works("btrfs", "data_checksums") and works("zfs", "data_checksums")
    assert not works("ext4", "data_checksums") and not works("xfs", "data_checksums")
    assert "silent" in cells[("ext4", "data_checksums")]["probe"]["detail"]
    assert works("btrfs", "snapshots") and works("zfs", "snapshots")
    assert works("xfs", "reflinks") and works("btrfs", "reflinks") and not works("ext4", "reflinks")
    assert works("btrfs", "compression") and works("zfs", "compression")
    assert works("ext4", "fallocate") and works("xfs", "fallocate")
    assert works("btrfs", "inline_small_files") and not works("xfs", "inline_small_files")
    assert cells[("ext4", "snapshots")]["status"] == "confirmed absent"
    assert cells[("xfs", "reflinks")]["status"] == "verified"
    # stored as records: suite features, case = feature, metric verified (bool, never ranked)
    db = sqlite3.connect(results / "fslab.sqlite")
    rows = db.execute("SELECT fs, \"case\", value, unit, better, artifact FROM records "
                      "WHERE suite='features' AND metric='verified'").fetchall()
    assert {(fs, case) for fs, case, *_ in rows} == {(fs, k) for fs in FOUR for k in PROBED}
    assert all(unit == "bool" and better is None and v in (0, 1) for _, _, v, unit, better, _ in rows)
    for fs, case, v, *_, art in rows:
        doc = json.loads((results / art).read_text())
        assert doc["feature"] == case and doc["fs"] == fs and (doc["outcome"] == "works") == (v == 1)
    ratio = db.execute("SELECT value FROM records WHERE metric='compression_ratio' AND fs='btrfs'").fetchone()
    assert ratio and ratio[0] > 1.5
    # the stored run renders again without probing
    run_id = db.execute("SELECT run_id FROM runs").fetchone()[0]
    again = run_fslab("features", "--fs", ",".join(FOUR), "--run", run_id, "--results", str(results))
    assert "verified" in again.stdout and "failed here" in again.stdout
    assert not leftovers(str(tmp_path))
    assert json.loads((state_dir / "resources.json").read_text()) == []
