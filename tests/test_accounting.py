"""Device and CPU accounting, the cache policy switch and `better` of CPU metrics (fast)."""
from __future__ import annotations

import os

import pytest

from fslab import plan as plans
from fslab.system import devstat
from fslab.fio.accounting import UnitAccount, fio_totals, process_cpu_seconds
from fslab.system.devstat import DevCounters
from fslab.fio import job_measurements, load_fio_output

from corpus_data import CORPUS

# a /sys/block/<dev>/stat line: 17 fields (reads, merges, sectors, ticks, writes, ...)
STAT = "  120  3  9600  40  250  7  20480  300  0  510  340  0  0  0  0  12  5\n"


def test_stat_line_fields():
    c = devstat.parse_stat(STAT)
    assert c == DevCounters(read_bytes=9600 * 512, write_bytes=20480 * 512, ios=370, busy_ms=510)


def test_counters_of_a_real_block_device_only():
    devs = [p.name for p in os.scandir("/sys/class/block")] if os.path.isdir("/sys/class/block") else []
    if not devs:
        pytest.skip("no block devices visible")
    dev = "/dev/" + devs[0]
    assert devstat.block_devices([dev, "/tmp/not-a-device.img"]) == [dev]
    before = devstat.read([dev])
    after = devstat.read([dev])
    assert (after - before).read_bytes >= 0 and after.ios >= before.ios


def test_process_cpu_seconds_counts_our_own_work():
    t0 = process_cpu_seconds(os.getpid())
    x = 0
    for i in range(3_000_000):
        x += i * i
    assert process_cpu_seconds(os.getpid()) > t0
    assert process_cpu_seconds(2 ** 22 + 12345) is None   # no such process


def _job(read_bytes, read_ios, write_bytes, write_ios, name="j"):
    return {"jobname": name, "read": {"io_bytes": read_bytes, "total_ios": read_ios},
            "write": {"io_bytes": write_bytes, "total_ios": write_ios}}


def test_fio_totals_sum_jobs_and_skip_client_aggregate():
    doc = {"jobs": [_job(4096, 1, 0, 0), _job(8192, 2, 1 << 20, 1)]}
    t = fio_totals(doc)
    assert (t.read_bytes, t.write_bytes, t.ops) == (12288, 1 << 20, 4)
    client = {"client_stats": [_job(100, 1, 0, 0, "a"), _job(100, 1, 0, 0, "All clients")]}
    assert fio_totals(client).read_bytes == 100


def test_derived_shares_and_efficiency():
    acct = UnitAccount(devices=["/dev/loop0"], daemon_pid=1,
                       dev=DevCounters(read_bytes=1 << 20, write_bytes=3 << 20, ios=10, busy_ms=500),
                       cpu_seconds=2.0, cpu_busy_percent=50.0, daemon_cpu_seconds=1.5)
    doc = {"jobs": [_job(4 << 20, 1024, 2 << 20, 512)]}
    ms = {m.metric: m for m in acct.measurements(doc, elapsed_s=2.0)}
    assert ms["device_read_share"].value == pytest.approx(0.25)
    assert ms["write_amplification"].value == pytest.approx(1.5)
    assert ms["write_amplification"].better == "lower"
    assert ms["ops_per_cpu_second"].value == pytest.approx(1536 / 2.0)
    assert ms["ops_per_cpu_second"].better == "higher"
    assert ms["ops_per_cpu_percent"].value == pytest.approx(1536 / 2.0 / 50.0)
    assert ms["daemon_cpu_seconds"].value == 1.5 and ms["device_busy_time"].value == 0.5
    for name in ("device_read_bytes", "device_write_bytes", "device_ios", "cpu_seconds",
                 "daemon_cpu_seconds", "read_io_bytes", "write_io_bytes", "device_read_share",
                 "ops_per_cpu_percent"):
        assert ms[name].better is None, name
    # a read-only job: no write amplification (nothing to divide by)
    ms = {m.metric for m in acct.measurements({"jobs": [_job(4096, 1, 0, 0)]}, 1.0)}
    assert "write_amplification" not in ms and "device_read_share" in ms


def test_no_device_no_device_metrics():
    acct = UnitAccount(devices=[], cpu_seconds=1.0, cpu_busy_percent=10.0)
    ms = {m.metric for m in acct.measurements({"jobs": [_job(4096, 1, 4096, 1)]}, 1.0)}
    assert not ms & {"device_read_bytes", "device_read_share", "write_amplification"}
    assert {"cpu_seconds", "read_io_bytes", "ops_per_cpu_second"} <= ms


def test_fio_cpu_percentages_are_never_ranked():
    doc = load_fio_output((CORPUS / "27_fio-plot-results_fio-3.33.json").read_bytes())
    ms = [m for j in job_measurements(doc) for m in j.measurements]
    cpu = [m for m in ms if m.metric in ("usr_cpu", "sys_cpu")]
    assert cpu and all(m.better is None for m in cpu)


def test_page_cache_defaults_and_plan_key():
    assert plans.parse('[run]\nprofile = "quick"\n').page_cache == "off"
    assert plans.parse('[run]\nprofile = "smoke"\n').page_cache == "off"
    assert plans.parse('[run]\nprofile = "paper"\n').page_cache == "on"
    assert plans.parse('[run]\nprofile = "paper"\npage_cache = "off"\n').page_cache == "off"
    with pytest.raises(Exception, match="page_cache"):
        plans.parse('[run]\npage_cache = "maybe"\n')
    p = plans.parse('[run]\npage_cache = "on"\n')
    assert plans.parse(plans.to_toml(p)).page_cache == "on"


def test_o_direct_probe_on_this_filesystem(tmp_path):
    from fslab.fio.cachepolicy import accepts_o_direct
    # whatever the answer, the probe leaves nothing behind
    accepts_o_direct(str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def _records(rows):
    import pandas as pd
    cols = ["run_id", "host", "fs", "variant", "suite", "case", "params", "iteration", "metric",
            "value", "unit", "better", "artifact", "ts"]
    return pd.DataFrame([["r", "localhost", fs, "default", "fio", case, '{"workload":"%s"}' % case,
                          it, metric, value, "B/s", "higher", None, 0.0]
                         for fs, case, it, metric, value in rows], columns=cols)


def test_percent_of_raw_device_per_workload():
    from fslab.report.baseline import baseline_json
    rows = []
    for it, (raw, ext4, zfs) in enumerate([(100, 90, 20), (120, 96, 30), (110, 99, 25)], 1):
        rows += [("raw", "seqread", it, "read_bw", raw), ("ext4", "seqread", it, "read_bw", ext4),
                 ("zfs", "seqread", it, "read_bw", zfs), ("ext4", "randread", it, "read_bw", 5)]
    out = baseline_json({"run_id": "r"}, _records(rows))
    got = {(r["workload"], r["fs"]): r["percent_of_raw"] for r in out["rows"]}
    # medians: raw 110, ext4 96, zfs 25; randread has no raw counterpart and is left out
    assert got == {("fio:seqread", "ext4"): pytest.approx(100 * 96 / 110),
                   ("fio:seqread", "zfs"): pytest.approx(100 * 25 / 110)}
    assert baseline_json(None, _records([r for r in rows if r[0] != "raw"])) is None


def test_report_lines_say_what_the_policy_did():
    from fslab.fio.cachepolicy import describe_run
    env = {"page_cache": "off", "filesystems": {
        "zfs": {"cache_policy": "direct I/O (O_DIRECT), primarycache=metadata", "daemon": "zfs-fuse"},
        "ext4": {"cache_policy": "direct I/O (O_DIRECT)"}}}
    assert describe_run(env) == ["page cache off: fio jobs measure the device",
                                 "  ext4: direct I/O (O_DIRECT)",
                                 "  zfs: direct I/O (O_DIRECT), primarycache=metadata; "
                                 "served by the zfs-fuse daemon (O_DIRECT stops at the "
                                 "kernel's page cache, not at the daemon)",
                                 "fio's own CPU figures (user %, system %, CPU seconds) leave "
                                 "out the zfs-fuse daemon's work: CPU is ranked only as "
                                 "operations per CPU-second (system-wide CPU)"]
    assert describe_run({}) == []


def test_suites_that_ran_buffered_are_named_beside_the_policy():
    """Issue 27: an S3 run at page cache off said 'measuring the device' for tasks that
    were buffered. The suites' own words (as Suite.cache_policy records them) are shown,
    and the answer's parenthesis names the buffered ones."""
    from fslab.fio.cachepolicy import answer_note, describe_run
    from fslab.workloads import get as suite_get
    from fslab.workloads.base import CacheUse
    env = {"page_cache": "off", "filesystems": {"ext3": {}, "xfs": {}}, "workloads": {}}
    for suite, case in (("tasks", "fileserver"), ("largefile", "largefile"), ("dedup", "dedup")):
        use = suite_get(suite).cache_policy("off")
        assert isinstance(use, CacheUse)
        env["workloads"][f"{suite}:{case}"] = {"page_cache": use.sentence, "buffered": use.buffered}
    lines = describe_run(env)
    assert lines[0] == "page cache off: each suite below says what it measured"
    assert any(ln.startswith("tasks: buffered at every policy, as the study ran") for ln in lines)
    assert any(ln.startswith("dedup: ") and "O_DIRECT" in ln for ln in lines)
    note = answer_note([env])
    assert "tasks buffered (its own I/O, said below)" in note and "numbers from the device" not in note
    assert "dedup" not in note and "largefile" not in note      # device-bound at policy off
    # at page cache on, dedup's read phase reads what setup left in memory, as vdbench did
    assert suite_get("dedup").cache_policy("on").buffered
    assert answer_note([{"page_cache": "off"}]) == "page cache off: numbers from the device"


def test_a_programs_buffered_io_is_not_said_to_be_a_studys():
    """An app suite's answer said 'pgbench, sqlite buffered as the study ran': no study ran
    them. The note names them as buffered by their own I/O, as each suite's line says."""
    from fslab.fio.cachepolicy import answer_note
    from fslab.workloads import get as suite_get
    env = {"page_cache": "off", "filesystems": {"ext4": {}}, "workloads": {}}
    for suite, case in (("pgbench", "tpcb-like"), ("sqlite", "wal")):
        use = suite_get(suite).cache_policy("off")
        env["workloads"][f"{suite}:{case}"] = {"page_cache": use.sentence, "buffered": use.buffered}
    note = answer_note([env])
    assert "pgbench, sqlite buffered (their own I/O, said below)" in note
    assert "study" not in note


def test_the_databases_size_beside_ram_is_printed_and_true_of_its_workload():
    """pgbench's policy line said 'the database's size beside RAM says whether reads could
    reach the device', and no output printed that size; select-only was said to measure
    'the WAL and fsync path', though it writes nothing."""
    from fslab.fio.cachepolicy import describe_run
    from fslab.workloads.apps.pgbench import database_vs_ram
    MiB, GiB = 1 << 20, 1 << 30
    tpcb = database_vs_ram(157 * MiB, 24 * GiB, "tpcb-like")
    select = database_vs_ram(157 * MiB, 24 * GiB, "select-only")
    assert tpcb.startswith("database 157 MiB, RAM 24576 MiB") and "WAL and fsync" in tpcb
    assert "memory and CPU" in select and "WAL" not in select
    assert "reads can reach the device" in database_vs_ram(20 * GiB, 24 * GiB, "select-only")
    env = {"page_cache": "off", "filesystems": {"ext4": {}}, "workloads": {
        "pgbench:tpcb-like": {"page_cache": "PostgreSQL's own I/O", "buffered": True,
                              "database_vs_ram": tpcb},
        "pgbench:select-only": {"page_cache": "PostgreSQL's own I/O", "buffered": True,
                                "database_vs_ram": select}}}
    lines = describe_run(env)
    assert f"pgbench:select-only: {select}" in lines and f"pgbench:tpcb-like: {tpcb}" in lines
