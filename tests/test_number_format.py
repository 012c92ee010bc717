"""One number format: the same stored value reads the same in every output path (the run
summary, `fslab report` in the terminal, Markdown and HTML, `fslab compare`)."""
from __future__ import annotations

import re

from rich.console import Console
from conftest import fslab_in_process
from fslab.records import Record
from fslab.report import export
from fslab.metrics.format import human, human_spread
from fslab.report.html import render_html
from fslab.results.load import load
from fslab.run.summary import print_run_summary
from fslab.store.db import Store

IOPS, BW = 171_679.0, 1.085e9          # 172 k ops/s, 1.01 GiB/s
READABLE = ("172 k ops/s", "1.01 GiB/s")
# what a second formatter would print instead: raw digits, scientific, the wrong scale
OTHER_FORMATS = re.compile(r"171,?679|1\.717e|1[.,]0[0-9]e\+0?3|1,035 MiB/s|1\.085e")


def test_human_scales_and_separates():
    assert human(IOPS, "ops/s") == "172 k ops/s" and human(BW, "B/s") == "1.01 GiB/s"
    assert human(BW, "bytes/s") == "1.01 GiB/s" and human(1234.0, "count") == "1,234"
    assert human_spread(IOPS, 170_000.0, 173_000.0, "ops/s") == "172 k ops/s (170–173)"


def test_labels_say_each_value_once_and_in_the_unit_it_is_printed_in():
    """Issue 47: fio's completion and total latency both read "mean read latency"; tables
    headed "[ns]" over values printed in µs; "53,145 count" and "0 count (0–0)"."""
    from fslab.metrics import label
    assert label("read_clat_mean") == "mean read latency"
    assert label("read_lat_mean") not in (label("read_clat_mean"), label("read_slat_mean"))
    assert label("write_lat_p99") != label("write_clat_p99")
    assert human(53_145.0, "count") == "53,145"
    from fslab.metrics.format import heading
    assert heading("mean read latency", "ns") == "mean read latency"
    assert heading("device IOs", "count") == "device IOs [count]"
    assert human(53_145.0, "count") == "53,145"
    assert human_spread(0.0, 0.0, 0.0, "count") == "0"
    assert human_spread(12.0, 10.0, 14.0, "count") == "12 (10–14)"


def _store(tmp_path) -> tuple[Store, list[str]]:
    store = Store(tmp_path / "results")
    runs = []
    for n in (1, 2):
        run_id = store.create_run("# format\n", {}, source="test", status="done", command="test")
        store.add_records(
            Record(run_id, "localhost", fs, "default", "fio", "randread", "{}", it, metric,
                   value * f + it * 1e-3, unit, "higher", None, 0.0)
            for fs, f in (("ext4", 1.0), ("xfs", 0.5)) for it in (1, 2, 3)
            for metric, value, unit in (("read_iops", IOPS, "ops/s"), ("read_bw", BW, "B/s")))
        runs.append(run_id)
    return store, runs


def _agrees(text: str, where: str) -> None:
    for readable in READABLE:
        assert readable in text, f"{where} lacks {readable!r}"
    assert not OTHER_FORMATS.search(text), f"{where}: {OTHER_FORMATS.search(text)[0]!r}"


def test_every_output_path_prints_the_same_value_the_same_way(tmp_path):
    store, (run_a, run_b) = _store(tmp_path)
    console = Console(record=True, width=200)
    print_run_summary(store, run_a, console)
    _agrees(console.export_text(), "run summary")
    md = export.markdown(load(store, [run_a]))
    _agrees(md, "Markdown report")
    page = tmp_path / "report.html"
    render_html(load(store, [run_a]), page, store.root)
    html = page.read_text()
    for readable in READABLE:
        assert readable in html, f"HTML report lacks {readable!r}"
    results = str(tmp_path / "results")
    rep = fslab_in_process("report", run_a, "--results", results, env={"COLUMNS": "200"})
    _agrees(rep.stdout, "terminal report")
    cmp = fslab_in_process("compare", run_a, run_b, "--results", results, env={"COLUMNS": "200"})
    _agrees(cmp.stdout, "compare")
