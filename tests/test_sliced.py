"""Interleaved slices (fslab/workloads/sliced.py): the block's job file, its balanced
orders, each candidate's share of fio's document and of the CPU marks."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from fslab.fio.clones import consecutive
from fslab.system.cpu import CpuSample, parse_stat_line
from fslab.workloads import sliced


def _slice(name: str, ios: int, runtime_ms: int, bins: dict[int, int]) -> dict:
    n = sum(bins.values())
    mean = sum(v * c for v, c in bins.items()) / n
    return {"jobname": name, "groupid": int(name.split("s")[1]), "error": 0,
            "usr_cpu": 10.0, "sys_cpu": 20.0, "job_runtime": runtime_ms,
            "job options": {"rw": "randwrite", "runtime": "250ms", "stonewall": ""},
            "write": {"io_bytes": ios * 4096, "total_ios": ios, "runtime": runtime_ms,
                      "iops": ios / runtime_ms * 1000, "bw_bytes": ios * 4096 / runtime_ms * 1000,
                      "clat_ns": {"N": n, "min": min(bins), "max": max(bins), "mean": mean,
                                  "stddev": 0.0, "percentile": {"50.000000": 0, "99.000000": 0},
                                  "bins": {str(v): c for v, c in bins.items()}}}}


def test_a_candidates_rate_is_its_io_over_its_slices_time_and_its_latency_pooled():
    # two slices of one candidate: 1,000 I/Os in 250 ms and 3,000 in 260 ms are 4,000 in
    # 510 ms (7,843/s), not the mean of the two rates (13,769/s) nor their sum
    a = _slice("c0s0", 1000, 250, {100: 990, 5000: 10})
    b = _slice("c0s1", 3000, 260, {200: 2990, 9000: 10})
    w = consecutive([a, b])["write"]
    assert w["total_ios"] == 4000 and w["runtime"] == 510
    assert abs(w["iops"] - 4000 / 0.510) < 1e-9
    assert abs(w["bw_bytes"] - 4000 * 4096 / 0.510) < 1e-6
    pooled = Counter({100: 990, 5000: 10, 200: 2990, 9000: 10})
    assert w["clat_ns"]["bins"] == {str(k): v for k, v in sorted(pooled.items())}
    # p99 of the pooled 4,000 samples: the 3,960th is still 200 ns; p50 200
    assert w["clat_ns"]["percentile"]["99.000000"] == 200
    assert w["clat_ns"]["N"] == 4000 and w["clat_ns"]["max"] == 9000


def test_split_gives_each_member_its_own_slices_merged_under_the_case_name():
    doc = {"fio version": "fio-3.33", "jobs": [
        _slice("c1s0", 500, 250, {300: 500}), _slice("c0s0", 1000, 250, {100: 1000}),
        _slice("c0s1", 1100, 250, {100: 1100}), _slice("c1s1", 700, 250, {300: 700})]}
    shares = sliced.split(doc, 2, "randwrite-qd32")
    assert set(shares) == {0, 1}
    for i, ios in ((0, 2100), (1, 1200)):
        (job,) = shares[i]["jobs"]
        assert job["jobname"] == "randwrite-qd32" and job["slices"] == 2
        assert job["write"]["total_ios"] == ios
        assert "runtime" not in job["job options"] and "stonewall" not in job["job options"]
        assert shares[i]["fio version"] == "fio-3.33"


def test_orders_reverse_every_other_cycle_and_follow_the_seed():
    orders = sliced.cycle_orders(4, 8, "42:1:fio:randread")
    assert orders == sliced.cycle_orders(4, 8, "42:1:fio:randread")
    assert orders != sliced.cycle_orders(4, 8, "42:2:fio:randread")
    for first, second in zip(orders[::2], orders[1::2]):
        assert second == list(reversed(first))
    # over a pair of cycles every member's mean place is the middle: a linear drift
    # across the pair costs every member the same
    for m in range(4):
        places = [o.index(m) for o in orders]
        assert sum(places) / len(places) == 1.5


def test_the_job_file_gives_every_slice_its_members_files_time_and_drain(tmp_path):
    members = [sliced.Member("ext4", {"rw": "randread", "bs": "4k", "runtime": "2",
                                      "time_based": "1", "size": "128m", "numjobs": "4"},
                             tmp_path / "a", "randread"),
               sliced.Member("xfs:ag8", {"rw": "randread", "bs": "4k", "runtime": "2",
                                         "time_based": "1", "size": "128m", "numjobs": "4",
                                         "direct": "1"}, tmp_path / "b", "randread", 4242)]
    count = sliced.slice_count(members[0].options, 250)
    assert count == 8
    orders = sliced.cycle_orders(2, count, "s")
    text = sliced.job_text(members, orders, 250, tmp_path / "mark.sh", tmp_path / "m.txt", "t")
    sections = [ln[1:-1] for ln in text.splitlines() if ln.startswith("[")]
    assert len(sections) == 16
    assert sections == [sliced.section_name(i, c) for c, o in enumerate(orders) for i in o]
    body = text.split("[c1s0]")[1].split("[")[0]
    assert f"directory={tmp_path / 'b'}" in body and "direct=1" in body
    assert "runtime=250ms" in body and "stonewall" in body and "time_based=1" in body
    assert "filename_format=randread.$jobnum.$filenum" in body
    assert f"post c1s0 {tmp_path / 'm.txt'} {tmp_path / 'b'} 4242" in body   # drains its own
    assert "runtime=2\n" not in text


def test_a_job_without_time_to_share_runs_as_units():
    assert sliced.why_not_sliced({"rw": "write", "size": "1g"}) is not None
    assert "steady" in sliced.why_not_sliced({"time_based": "1", "runtime": "60",
                                              "steadystate": "iops:20%"})
    assert "ramp" in sliced.why_not_sliced({"time_based": "1", "runtime": "2", "ramp_time": "1"})
    assert sliced.why_not_sliced({"time_based": "1", "runtime": "2"}) is None


def test_slice_marks_give_each_member_its_own_slices_wall_time_and_cpu(tmp_path):
    marks = tmp_path / "marks.txt"
    marks.write_text(
        "pre c0s0 100.00 cpu 100 0 50 1000 10 0 0 0 0 0\n"
        "post c0s0 100.25 cpu 140 0 60 1040 12 0 0 0 0 0 | 30 20\n"
        "pre c1s0 100.50 cpu 150 0 60 1050 12 0 0 0 0 0\n"
        "post c1s0 100.76 cpu 160 0 70 1090 13 0 0 0 0 0\n"
        "pre c0s1 101.00 cpu 170 0 70 1100 13 0 0 0 0 0 | 31 20\n"
        "post c0s1 101.25 cpu 200 0 80 1140 14 0 0 0 0 0 | 40 21\n")
    got = sliced.slice_times(marks, 2, 100)
    assert abs(got[0].seconds - 0.50) < 1e-9 and abs(got[1].seconds - 0.26) < 1e-9
    first = parse_stat_line("cpu 140 0 60 1040 12 0 0 0 0 0").busy - \
        parse_stat_line("cpu 100 0 50 1000 10 0 0 0 0 0").busy
    second = parse_stat_line("cpu 200 0 80 1140 14 0 0 0 0 0").busy - \
        parse_stat_line("cpu 170 0 70 1100 13 0 0 0 0 0").busy
    assert got[0].cpu_end.busy == first + second == 90
    assert got[1].cpu_end.busy == 20
    # the daemon's CPU only where both marks of a slice read it (c0s1: 10 ticks of 100/s)
    assert abs(got[0].daemon_cpu_seconds - 0.1) < 1e-9 and got[1].daemon_cpu_seconds is None


def test_the_mark_script_writes_a_line_that_slice_times_reads(tmp_path):
    import subprocess
    mark = tmp_path / "mark.sh"
    mark.write_text(sliced.MARK_SCRIPT)
    mark.chmod(0o755)
    marks = tmp_path / "marks.txt"
    import os
    for phase in ("pre", "post"):
        subprocess.run([str(mark), phase, "c0s0", str(marks), str(tmp_path), str(os.getpid())],
                       check=True, timeout=30)
    got = sliced.slice_times(marks, 1, os.sysconf("SC_CLK_TCK"))
    assert got[0].seconds > 0 and got[0].cpu_end.total > 0
    assert got[0].daemon_cpu_seconds is not None and got[0].daemon_cpu_seconds >= 0
    assert Path(marks).read_text().count("\n") == 2


def test_the_bare_device_runs_as_its_own_unit_beside_a_block():
    # the raw device was put into a block: its slices had no directory for their files
    # (fio layout: unlink ... Read-only file system) and every raw unit failed
    from fslab.plan import FilesystemSpec
    from fslab.run.blocks import blocks
    from fslab.run.flags import from_flags
    from fslab.run.schedule import Schedule
    plan = from_flags(None, "ext4,xfs", "fio", "quick", 1, None, [], None, None, with_text=False)
    plan = plan.model_copy(update={"filesystem": [*plan.filesystem, FilesystemSpec(name="raw")]})
    got = blocks(Schedule.of(plan).round(1), plan, existing=False)
    assert all(len(b) == 1 for b in got if b[0].spec.name == "raw")
    assert {len(b) for b in got if b[0].spec.name != "raw"} == {2}
    assert sum(len(b) for b in got) == 3 * 7
