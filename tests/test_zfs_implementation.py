"""The ZFS implementation (kernel OpenZFS or zfs-fuse) is a driver property that every
environment names, so no ZFS number is read as the other implementation's."""
import pytest

from fslab import filesystems
from fslab.features.feature_claims import implementation_key
from fslab.filesystems import zfs
from fslab.system.proc import which


def test_plain_drivers_are_their_own_implementation():
    ext4 = filesystems.get("ext4")
    assert ext4.implementation() == "ext4" == ext4.implementation_label()
    assert implementation_key("ext4") == "ext4"
    assert "ext4 implementation" not in filesystems.tool_versions(["ext4"])


@pytest.mark.skipif(not which("zpool"), reason="no zpool tools on this host")
def test_zfs_environment_names_implementation_and_version():
    drv = filesystems.get("zfs")
    label = filesystems.tool_versions(["zfs"])["zfs implementation"]
    assert label == drv.implementation_label()
    if zfs.kernel_zfs():
        assert drv.implementation() == implementation_key("zfs") == "zfs"
        assert label.startswith("OpenZFS ") and label.endswith("kernel module")
    else:
        assert drv.implementation() == implementation_key("zfs") == "zfs-fuse"
        assert label.startswith("zfs-fuse 0.") and "FUSE" in label


@pytest.mark.parametrize("recorded, docs", [("zfs", "OpenZFS"), ("zfs-fuse", "zfs-fuse")])
def test_claims_follow_the_implementation_the_run_recorded_not_this_host(tmp_path, recorded, docs):
    """A guest run measured kernel OpenZFS; its report is made on a host with zfs-fuse (or
    the other way round): the feature matrix and the recommendation cite the run's ZFS."""
    import json
    from corpus_data import CORPUS
    from fslab.fio.parse import job_measurements
    from fslab.recommend.evidence import gather
    from fslab.records import Record, canonical_params
    from fslab.store import Store
    (job,) = job_measurements(json.loads((CORPUS / "12_ocs-ci_fio-3.7.json").read_text()))
    store = Store(tmp_path / "results")
    env = {"filesystems": {fs: {"fs": fs, "in_effect": {"implementation": impl}}
                           for fs, impl in (("ext4", None), ("zfs", recorded))}}
    run_id = store.create_run("[run]\n", env, name="guest", status="finished")
    store.add_records([Record(run_id, "guest-tcg", fs, "default", "fio", "randwrite",
                              canonical_params({"workload": "randwrite"}), it, m.metric,
                              m.value * (1 + it / 10), m.unit, m.better, None, float(it))
                       for fs in ("ext4", "zfs") for it in (1, 2, 3) for m in job.measurements])
    ev = gather(store, run_id)
    assert ev.matrix.implementations["zfs"] == recorded
    assert docs in ev.matrix.cell("zfs", "snapshots").feature_claim.ref
    store.close()


def test_reports_say_which_zfs_measured_before_any_number():
    from fslab.results.provenance import measured_where
    from fslab.store.environment import environments_of
    fuse = {"run_id": "a", "environment": {"tools": {"zfs implementation": "zfs-fuse 0.7.0 (FUSE daemon)"}}}
    guest = {"run_id": "b", "environment": {
        "tools": {"zfs implementation": "OpenZFS 2.3.2 kernel module"},
        "guest": {"label": "guest-tcg", "kernel": "6.1.0-56-amd64", "emulated": True}}}
    (line,) = measured_where(environments_of([fuse]))
    assert line.startswith("zfs here is zfs-fuse 0.7.0 (FUSE daemon): a userspace port")
    assert "say nothing about kernel ZFS" in line
    lines = measured_where(environments_of([guest]))
    assert lines[0] == "zfs here is OpenZFS 2.3.2 kernel module"
    assert "EMULATED" in lines[1] and "guest-tcg" in lines[1]
    assert measured_where(environments_of([{"run_id": "c", "environment": {"tools": {"fio": "fio-3.33"}}}])) == []


def test_no_openzfs_claim_cites_zfs_fuse():
    # a guest OpenZFS report cited "zfs(8), zpool(8) of zfs-fuse 0.7.0" for scrub and
    # metadata checksums: the claims OpenZFS shares with zfs-fuse cite OpenZFS's pages
    from fslab.filesystems.zfs import FUSE_FEATURE_CLAIMS, KERNEL_FEATURE_CLAIMS
    assert set(KERNEL_FEATURE_CLAIMS) == set(FUSE_FEATURE_CLAIMS)
    for feature, claim in KERNEL_FEATURE_CLAIMS.items():
        assert "fuse" not in (claim.ref + claim.note).lower(), (feature, claim)
