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
UNITS = {"ops/s", "B/s", "ns", "%", "code"}



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
    entries = raw.get("jobs") or raw["client_stats"]
    jobs = job_measurements(doc)
    assert len(jobs) == len(entries)
    for job, entry in zip(jobs, entries):
        assert job.job_name == entry["jobname"].strip()
        assert job.error == entry["error"]
        by_metric = {m.metric: m for m in job.measurements}
        assert len(by_metric) == len(job.measurements), "a metric appears twice"
        for m in job.measurements:
            assert m.unit in UNITS and math.isfinite(m.value) and m.value >= 0
            # CPU % of a fixed-time job is described, never ranked
            assert m.better == {"code": None, "%": None, "ns": "lower"}.get(m.unit, "higher")
        assert by_metric["error"].value == entry["error"]
        for d in ("read", "write"):
            if f"{d}_iops" in by_metric:
                assert by_metric[f"{d}_iops"].value == pytest.approx(entry[d]["iops"])
                kib = entry[d]["bw"] * 1024
                bw = entry[d].get("bw_bytes", kib)
                assert by_metric[f"{d}_bw"].value == pytest.approx(bw)
                assert abs(bw - kib) <= 1024, "bw_bytes and bw (KiB/s) disagree"
            else:   # only skipped when the direction did no I/O at all
                assert entry[d].get("total_ios", entry[d]["io_bytes"]) == 0


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
    v = values("10_fio-plot_fio-3.6-31-g4386.json")
    assert v["read_bw"] == 142851                               # bw_bytes, not bw=139 KiB/s
    assert v["read_clat_p50"] == 28442624
    assert v["read_clat_p99"] == 42729472
    assert v["read_clat_p99.9"] == 45875200
    assert v["read_iops"] == pytest.approx(34.875777)


def test_fio31_without_bw_bytes_converts_kib():
    raw = raw_doc("08_disk_test_fio-3.1.json")["jobs"][0]
    v = values("08_disk_test_fio-3.1.json")
    d = "read" if raw["read"]["bw"] else "write"
    assert "bw_bytes" not in raw[d]
    assert v[f"{d}_bw"] == raw[d]["bw"] * 1024
    assert v[f"{d}_clat_mean"] == pytest.approx(raw[d]["clat_ns"]["mean"])


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
    assert [j.hostname for j in jobs] == ["perf36"] * 5 + ["perf84"] * 5 + [None]
    assert jobs[-1].aggregate and jobs[-1].job_name == "All clients"
    assert not any(j.aggregate for j in jobs[:-1])
    iops = {m.metric: m.value for m in jobs[5].measurements}["read_iops"]
    assert iops == pytest.approx(10833.599574)
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
