"""Device accounting against fio jobs with a known byte count, on real loop images.

A job that writes exactly 16 MiB and one that reads a 16 MiB file four times without
dropping its cached pages between passes (invalidate=0): with the page cache off the
device must see every byte (plus a little metadata); with it on, three passes of four
come from memory and the share says so.
"""
from __future__ import annotations

import json
import sqlite3

import pytest

from conftest import leftovers, needs_root, run_fslab

pytestmark = [pytest.mark.e2e, needs_root()]

MiB = 1 << 20
PLAN = """
[run]
profile = "smoke"
iterations = 1

[[filesystem]]
name = "{fs}"

[[suite]]
kind = "fio"
workloads = ["w16", "r16"]
scale = false
[suite.jobs.w16]
rw = "write"
bs = "1M"
size = "16M"
numjobs = "1"
time_based = "0"
[suite.jobs.r16]
rw = "read"
bs = "1M"
size = "16M"
numjobs = "1"
time_based = "0"
loops = "4"
invalidate = "0"
"""


def _values(db_path) -> dict[tuple[str, str], float]:
    db = sqlite3.connect(db_path)
    return {(case, metric): v for case, metric, v in
            db.execute('SELECT "case", metric, value FROM records')}


@pytest.mark.parametrize("fs", ["ext4", "zfs"])
def test_device_bytes_match_a_known_job(fs, state_dir, results, tmp_path):
    plan = tmp_path / "known.toml"
    plan.write_text(PLAN.format(fs=fs))
    run_fslab("run", str(plan), "--results", str(results), "--workdir", str(tmp_path / "work"))
    v = _values(results / "fslab.sqlite")
    if ("w16", "write_io_bytes") not in v:
        pytest.skip(f"{fs} not available here")
    assert v[("w16", "write_io_bytes")] == 16 * MiB
    # every byte fio wrote reached the device; journal/metadata add a little, not a lot
    assert 16 * MiB <= v[("w16", "device_write_bytes")] <= 16 * MiB * 1.3 + 4 * MiB
    assert v[("w16", "write_amplification")] == pytest.approx(
        v[("w16", "device_write_bytes")] / (16 * MiB))
    assert v[("r16", "read_io_bytes")] == 64 * MiB            # 16 MiB, four loops
    # page cache off: each of the four passes is read from the device again
    assert 0.95 <= v[("r16", "device_read_share")] <= 1.3
    assert v[("r16", "device_write_bytes")] < 2 * MiB           # the layout is not counted
    assert v[("r16", "cpu_seconds")] > 0 and v[("r16", "ops_per_cpu_second")] > 0
    db = sqlite3.connect(results / "fslab.sqlite")
    env = json.loads(db.execute("SELECT environment FROM runs").fetchone()[0])
    assert env["page_cache"] == "off"
    policy = env["filesystems"][fs]["cache_policy"]
    assert "O_DIRECT" in policy
    if env["filesystems"][fs].get("daemon"):       # zfs-fuse: its CPU is accounted separately
        assert "primarycache=metadata" in policy
        assert v[("r16", "daemon_cpu_seconds")] > 0
        # what the units ran on is read back after the policy set it (it said "all")
        in_effect = env["filesystems"][fs]["in_effect"]["properties"]["primarycache"]
        assert in_effect == {"value": "metadata", "source": "local"}
    assert not leftovers(str(tmp_path))


# another test dropping every cache (zfs, integrity) would send its cached passes to the device
@pytest.mark.serial
def test_page_cache_on_shows_reads_from_memory(state_dir, results, tmp_path):
    plan = tmp_path / "known.toml"
    plan.write_text(PLAN.format(fs="ext4").replace('workloads = ["w16", "r16"]',
                                                   'workloads = ["r16"]'))
    run_fslab("run", str(plan), "--page-cache", "on", "--results", str(results),
              "--workdir", str(tmp_path / "work"))
    v = _values(results / "fslab.sqlite")
    assert v[("r16", "read_io_bytes")] == 64 * MiB
    # the first pass reads the device (fio's layout leaves nothing cached), the three
    # others the page cache: a quarter of the bytes reach the device
    assert 0.2 <= v[("r16", "device_read_share")] <= 0.35
    env = json.loads(sqlite3.connect(results / "fslab.sqlite")
                     .execute("SELECT environment FROM runs").fetchone()[0])
    assert env["page_cache"] == "on" and "buffered" in env["filesystems"]["ext4"]["cache_policy"]
    assert not leftovers(str(tmp_path))
