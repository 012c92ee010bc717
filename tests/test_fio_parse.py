"""The fio parser against every real-world output in the shared corpus.

Expected numbers are read from the JSON here with the standard library (a different
way of finding the document than the parser's), then compared after unit conversion.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from fslab.fio import FioParseError, job_measurements, load_fio_output

from corpus_data import CORPUS

FILES = sorted(p for p in CORPUS.glob("*") if p.suffix in (".json", ".txt")) if CORPUS.is_dir() else []
UNREADABLE = {"13_ocs-ci_fio-3.7.json": "truncated", "35_fio-plot_none.txt": "engine libaio not loadable"}
UNITS = {"ops/s", "B/s", "ns", "%", "code", "count"}



def raw_doc(name: str) -> dict:
    """The corpus document found line by line: the first line opening with '{' (or '>{')."""
    text = (CORPUS / name).read_text(errors="replace")
    lines = text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.lstrip(">").startswith("{"):
            rest = "".join(lines[i:]).lstrip(">")
            return json.JSONDecoder().raw_decode(rest)[0]
    raise AssertionError(f"no document in {name}")


def values(name: str, job: int = 0) -> dict[str, float]:
    doc = load_fio_output((CORPUS / name).read_bytes(), name)
    return {m.metric: m.value for m in job_measurements(doc)[job].measurements}


def test_corpus_is_complete():
    assert len(FILES) == 35, [p.name for p in FILES]


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_corpus_file_parses_or_says_why(path: Path):
    if path.name in UNREADABLE:
        with pytest.raises(FioParseError) as e:
            load_fio_output(path.read_bytes(), path.name)
        assert str(e.value).startswith(path.name + ": ")
        assert UNREADABLE[path.name] in str(e.value)
        return
    doc = load_fio_output(path.read_bytes(), path.name)
    raw = raw_doc(path.name)
    # a job's clones (same name, group and server) are one result: their sum
    groups: dict[tuple, list[dict]] = {}
    for e in raw.get("jobs") or raw["client_stats"]:
        groups.setdefault((e["jobname"], e.get("groupid"), e.get("hostname"), e.get("port")),
                          []).append(e)
    jobs = job_measurements(doc)
    assert len(jobs) == len(groups)
    for job, clones in zip(jobs, groups.values()):
        entry = clones[0]
        assert job.job_name == entry["jobname"].strip()
        assert job.error == next((c["error"] for c in clones if c["error"]), 0)
        by_metric = {m.metric: m for m in job.measurements}
        assert len(by_metric) == len(job.measurements), "a metric appears twice"
        for m in job.measurements:
            assert m.unit in UNITS and math.isfinite(m.value) and m.value >= 0
            # CPU % of a fixed-time job is described, never ranked; per-clone means too
            assert m.better == ({"code": None, "%": None, "count": None, "ns": "lower"}
                                .get(m.unit, None if m.metric.endswith("_per_job") else "higher"))
        assert by_metric["error"].value == job.error
        if len(clones) > 1:
            assert by_metric["clones"].value == len(clones)
        for d in ("read", "write"):
            if f"{d}_iops" in by_metric:
                assert by_metric[f"{d}_iops"].value == pytest.approx(sum(c[d]["iops"] for c in clones))
                kib = sum(c[d]["bw"] for c in clones) * 1024
                bw = sum(c[d].get("bw_bytes", c[d]["bw"] * 1024) for c in clones)
                assert by_metric[f"{d}_bw"].value == pytest.approx(bw)
                assert abs(bw - kib) <= 1024 * len(clones), "bw_bytes and bw (KiB/s) disagree"
                lat = [c[d].get("clat_ns") for c in clones]
                if f"{d}_clat_max" in by_metric and all(lat):
                    assert by_metric[f"{d}_clat_max"].value == max(x["max"] for x in lat)
                    assert by_metric[f"{d}_clat_min"].value == min(x["min"] for x in lat)
            else:   # only skipped when the direction did no I/O at all
                assert all(c[d].get("total_ios", c[d]["io_bytes"]) == 0 for c in clones)


def test_fio2_usec_latencies_become_ns():
    raw = raw_doc("01_yardstick_fio-2.1.3.json")["jobs"][0]["read"]
    v = values("01_yardstick_fio-2.1.3.json")
    assert raw["clat"]["mean"] == 97.84                         # usec in fio 2.x
    assert v["read_clat_mean"] == pytest.approx(97_840)        # ns
    assert v["read_clat_max"] == pytest.approx(16_902_000)
    assert v["read_lat_min"] == pytest.approx(86_000)
    assert v["read_clat_p99"] == pytest.approx(161_000)
    assert v["read_clat_p99.9"] == pytest.approx(215_000)
    assert v["read_bw"] == 36113 * 1024                          # KiB/s -> B/s
    assert v["read_iops"] == 9028
    assert not any(k.startswith("write_") for k in v), "pure-read job got write metrics"


def test_fio3_ns_latencies_and_bw_bytes():
    # two clones of one job (numjobs=2, no group_reporting): one result, their sum
    raw = raw_doc("10_fio-plot_fio-3.6-31-g4386.json")["jobs"]
    assert [j["read"]["bw_bytes"] for j in raw] == [142851, 142870]
    v = values("10_fio-plot_fio-3.6-31-g4386.json")
    assert v["read_bw"] == 142851 + 142870                      # bw_bytes, not bw=139 KiB/s
    assert v["read_iops"] == pytest.approx(sum(j["read"]["iops"] for j in raw))
    assert v["read_iops_per_job"] == pytest.approx(v["read_iops"] / 2) and v["clones"] == 2
    # percentiles: each clone's, weighted by its samples (json without bins)
    n = [j["read"]["clat_ns"].get("N", j["read"]["total_ios"]) for j in raw]
    p99 = [j["read"]["clat_ns"]["percentile"]["99.000000"] for j in raw]
    assert p99[0] == 42729472
    assert v["read_clat_p99"] == pytest.approx((p99[0] * n[0] + p99[1] * n[1]) / sum(n))


def test_fio31_without_bw_bytes_converts_kib():
    entries = raw_doc("08_disk_test_fio-3.1.json")["jobs"]
    clones = [e for e in entries if e["jobname"] == entries[0]["jobname"]]
    v = values("08_disk_test_fio-3.1.json")
    d = "read" if clones[0]["read"]["bw"] else "write"
    assert "bw_bytes" not in clones[0][d] and len(clones) == 4
    assert v[f"{d}_bw"] == sum(c[d]["bw"] for c in clones) * 1024
    n = [c[d]["clat_ns"].get("N", c[d]["total_ios"]) for c in clones]
    assert v[f"{d}_clat_mean"] == pytest.approx(
        sum(c[d]["clat_ns"]["mean"] * k for c, k in zip(clones, n)) / sum(n))


def test_failed_job_keeps_error_and_zero_of_its_direction():
    v = values("26_fio-plot_fio-3.33.txt")     # rw=write, error=22 (EINVAL), no I/O done
    assert v["error"] == 22
    assert v["write_iops"] == 0 and v["write_bw"] == 0
    assert "read_iops" not in v
    assert not any("clat" in k for k in v), "no samples must not become a 0 ns latency"


def test_gtod_reduce_has_no_invented_latency():
    v = values("20_kubestr_fio-3.20.json")
    assert v["read_iops"] == pytest.approx(982.05078)
    assert not any("lat" in k for k in v)


def test_mixed_job_has_both_directions_and_cpu():
    v = values("09_fio-plot_fio-3.1.json")
    raw = raw_doc("09_fio-plot_fio-3.1.json")["jobs"][0]
    assert v["write_iops"] == pytest.approx(raw["write"]["iops"])
    assert v["read_iops"] == pytest.approx(raw["read"]["iops"])
    assert v["usr_cpu"] == pytest.approx(raw["usr_cpu"])
    assert v["sys_cpu"] == pytest.approx(raw["sys_cpu"])


def test_fsync_latency_from_sync_block():
    v = values("18_fio-plot_fio-3.16.json")
    assert v["sync_lat_mean"] == 515.5 and v["sync_lat_p99"] == 532


def test_json_plus_bins_are_tolerated():
    raw = raw_doc("23_arcaflow-plugin-fio_fio-3.29.json")["jobs"][0]
    d = "read" if raw["read"]["iops"] else "write"
    assert "bins" in raw[d]["clat_ns"]
    assert values("23_arcaflow-plugin-fio_fio-3.29.json")[f"{d}_clat_p99"] == \
        raw[d]["clat_ns"]["percentile"]["99.000000"]


def test_text_around_json_and_second_document():
    # 15: a document, shell prompts, then a second document: the first one counts
    first = raw_doc("15_fio-results-tmp_fio-3.12.txt")
    doc = load_fio_output((CORPUS / "15_fio-results-tmp_fio-3.12.txt").read_bytes())
    assert doc["timestamp"] == first["timestamp"]
    for name in ("11_pbench_fio-3.7.txt", "16_fio-results-tmp_fio-3.12.txt", "24_FIO-tests_fio-3.33.txt"):
        assert load_fio_output((CORPUS / name).read_text())   # str input works too


def test_client_stats_hosts_and_aggregate():
    doc = load_fio_output((CORPUS / "11_pbench_fio-3.7.txt").read_bytes())
    jobs = job_measurements(doc)
    # five clones per server (numjobs=5): one result per server, their sum
    assert [j.hostname for j in jobs] == ["perf36", "perf84", None]
    assert jobs[-1].aggregate and jobs[-1].job_name == "All clients"
    assert not any(j.aggregate for j in jobs[:-1])
    raw = [e for e in raw_doc("11_pbench_fio-3.7.txt")["client_stats"]
           if e["hostname"] == "perf84" and e["jobname"] != "All clients"]
    assert raw[0]["read"]["iops"] == pytest.approx(10833.599574) and len(raw) == 5
    iops = {m.metric: m.value for m in jobs[1].measurements}["read_iops"]
    assert iops == pytest.approx(sum(e["read"]["iops"] for e in raw))
    # two fio servers on one host are told apart by port
    doc = load_fio_output((CORPUS / "34_fio-analyzer_fio-3.43.json").read_bytes())
    assert [j.hostname for j in job_measurements(doc)] == ["127.0.0.1:18802", "127.0.0.1:18801", None]


def test_global_rw_option_applies_to_jobs():
    doc = {"global options": {"rw": "randrw"}, "jobs": [
        {"jobname": "j", "error": 0,
         "read": {"iops": 5, "bw": 1, "total_ios": 5, "clat_ns": {"N": 5, "mean": 10, "min": 1, "max": 20}},
         "write": {"iops": 0, "bw": 0, "total_ios": 0, "clat_ns": {"N": 0, "mean": 0, "min": 0, "max": 0}}}]}
    v = {m.metric: m.value for m in job_measurements(doc)[0].measurements}
    assert v["write_iops"] == 0 and "write_clat_mean" not in v and v["read_clat_max"] == 20


@pytest.mark.parametrize("data,reason", [
    (b"", "empty"),
    (b"   \n", "empty"),
    (b'{"fio version": "fio-3.1"}', "not fio output"),
    (b"[1, 2]", "not fio output"),
    (b'xx {"jobs": [ {"jobname": } ]}', "invalid JSON at line 1"),
])
def test_specific_reasons(data, reason):
    with pytest.raises(FioParseError, match=f"^src: .*{reason}"):
        load_fio_output(data, "src")


def test_clone_percentiles_come_from_the_merged_json_plus_histogram():
    """json+ gives each clone's latency histogram: the job's percentiles are exact."""
    def clone(bins, iops):
        n = sum(bins.values())
        return {"jobname": "j", "groupid": 0, "error": 0, "job options": {"rw": "randread"},
                "read": {"iops": iops, "bw_bytes": iops * 4096, "bw": iops * 4, "total_ios": n,
                         "clat_ns": {"N": n, "min": min(bins), "max": max(bins),
                                     "mean": sum(k * v for k, v in bins.items()) / n,
                                     "percentile": {"50.000000": 0, "99.000000": 0},
                                     "bins": {str(k): v for k, v in bins.items()}}}}
    fast = clone({100: 90, 200: 10}, 1000)
    slow = clone({1000: 50, 5000: 50}, 10)
    v = {m.metric: m.value for m in job_measurements({"jobs": [fast, slow]})[0].measurements}
    # 200 samples: 90 at 100, 10 at 200, 50 at 1000, 50 at 5000 (the 100th is at 200)
    assert v["read_clat_p50"] == 200 and v["read_clat_p99"] == 5000
    assert v["read_clat_min"] == 100 and v["read_clat_max"] == 5000
    assert v["read_clat_mean"] == pytest.approx((90 * 100 + 10 * 200 + 50 * 1000 + 50 * 5000) / 200)
    assert v["read_iops"] == 1010 and v["clones"] == 2 and v["read_iops_per_job"] == 505


def test_a_job_too_short_to_time_keeps_its_rates_unranked():
    # fio's own filestat example, run here on ext4: 500 creates in 11 ms, 500 stats in 2 ms.
    # fio times whole ms, so "250,000 IOPS" came out on ext4 and xfs alike: the rounding's
    # number. Rates stay (described, with the run time); latencies still rank.
    from pathlib import Path
    from fslab.fio.parse import job_measurements, load_fio_output
    path = Path(__file__).parent / "data" / "fio-filestat-500-files-2ms.json"
    jobs = job_measurements(load_fio_output(path.read_bytes(), str(path)))
    assert len(jobs) == 2
    for job in jobs:
        m = {x.metric: x for x in job.measurements}
        assert m["read_iops"].better is None and m["read_bw"].better is None
        assert 0 < m["read_runtime"].value < 0.1 and m["read_runtime"].unit == "s"
        assert m["read_clat_mean"].better == "lower"
