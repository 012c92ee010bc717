"""`fslab compare`: the change in % with its interval and p, hyperfine's wording, runs of
two stores, the notes on what else differs, --fail-if-slower and --html (recorded values
in a store; tests/test_compare_e2e.py plants a real regression with fio)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from fslab.cli import app
from fslab.errors import FslabError
from fslab.records import Record
from fslab.report import compare as cmp
from fslab.store.db import Store

A_IOPS = [100_000.0, 101_000.0, 102_000.0, 103_000.0, 104_000.0]
B_IOPS = [80_000.0, 81_000.0, 82_000.0, 83_000.0, 84_000.0]     # about 20% slower
A_P99 = [2.0e6, 2.1e6, 2.2e6, 2.3e6, 2.4e6]                      # ns
B_P99 = [2.0e6, 2.1e6, 2.2e6, 2.3e6, 2.4e6]                      # unchanged
ENV = {"hostname": "box", "kernel": "6.1.0-18-amd64", "cpus": 2, "tools": {"fio": "fio-3.33"},
       "target": {"kind": "loop"}, "load": {"loadavg": [0.1, 0.1, 0.1],
                                            "cpu_pressure_some": {"avg10": 0.0, "avg60": 0.0}}}
PLAN = '[run]\nprofile = "smoke"\n[[suite]]\nkind = "fio"\nworkloads = ["randread"]\n'


def _run(store: Store, iops, p99, env=ENV, plan=PLAN) -> str:
    run_id = store.create_run(plan, env, source="test", status="finished", command="test")
    store.add_records(
        Record(run_id, "localhost", "ext4", "default", "fio", "randread", '{"workload":"randread"}',
               it, metric, value, unit, better, None, 0.0)
        for it, (i, p) in enumerate(zip(iops, p99), 1)
        for metric, value, unit, better in (("read_iops", i, "ops/s", "higher"),
                                            ("read_bw", i * 4096, "B/s", "higher"),
                                            ("read_clat_p99", p, "ns", "lower")))
    return run_id


def _cli(*args: str, cwd=None) -> tuple[int, str, str]:
    """The command as `fslab` runs it: an FslabError is its one line and exit code."""
    r = CliRunner().invoke(app, list(args), env={"COLUMNS": "220"})
    if isinstance(r.exception, FslabError):
        return r.exception.code, r.stdout, str(r.exception)
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r.exit_code, r.stdout, r.stderr


@pytest.fixture
def two_runs(tmp_path):
    store = Store(tmp_path / "res")
    return str(tmp_path / "res"), _run(store, A_IOPS, A_P99), _run(store, B_IOPS, B_P99)


def test_change_interval_p_and_factor_are_the_exact_mann_whitney_ones(two_runs, tmp_path):
    results, a, b = two_runs
    store = Store(results)
    c = cmp.compare_runs(cmp.Side(store, store.run(a)), cmp.Side(store, store.run(b)))
    iops = c.rows[c.rows["metric"] == "read_iops"].iloc[0]
    # Hodges-Lehmann: the median of every log(b/a) over all 25 pairs
    hl = math.exp(np.median(np.log(np.divide.outer(B_IOPS, A_IOPS))))
    assert iops["change_pct"] == pytest.approx((hl - 1) * 100)
    assert iops["change_ci_lo"] < iops["change_pct"] < iops["change_ci_hi"] < 0
    assert iops["p"] == pytest.approx(2 / 252)          # 5+5 fully separated: exact p
    assert iops["significant"] and iops["answer"] and iops["worse_pct"] > 0
    assert iops["times"].endswith("× slower") and iops["times"].startswith(f"{1 / hl:.2f}")
    p99 = c.rows[c.rows["metric"] == "read_clat_p99"].iloc[0]
    assert p99["answer"] and not p99["significant"] and cmp.verdict_text(p99.to_dict()) == "~"
    assert list(c.rows["metric"][:2]) == ["read_iops", "read_clat_p99"]   # answer first


def test_terminal_table_names_the_columns_in_the_order_given(two_runs):
    results, a, b = two_runs
    code, out, _ = _cli("compare", a, b, "--results", results)
    assert code == 0, out
    header = next(ln for ln in out.splitlines() if "change [95% CI]" in ln)
    assert header.index(a) < header.index(b) and "vs baseline" in header
    row = next(ln for ln in out.splitlines() if "read IOPS" in ln)
    assert "-19.6% [" in row and "p=0.008" in row and "× slower" in row
    assert "exact Mann-Whitney" in out
    code, out, _ = _cli("compare", b, a, "--results", results)
    header = next(ln for ln in out.splitlines() if "change [95% CI]" in ln)
    assert header.index(b) < header.index(a)
    assert "× faster" in next(ln for ln in out.splitlines() if "read IOPS" in ln)


def test_fail_if_slower_exits_1_on_a_slowdown_beyond_the_threshold_only(two_runs):
    results, a, b = two_runs
    code, out, _ = _cli("compare", a, b, "--results", results, "--fail-if-slower", "5%")
    assert code == 1, out
    assert "FAILED" in out and "ext4 fio:randread read IOPS -19.6%" in out
    assert "Holm over the 2" in out
    code, out, _ = _cli("compare", a, b, "--results", results, "--fail-if-slower", "25%")
    assert code == 0 and "passed" in out, out
    code, out, _ = _cli("compare", b, a, "--results", results, "--fail-if-slower", "5")
    assert code == 0 and "passed" in out, out            # B faster: nothing slower
    code, _, why = _cli("compare", a, b, "--results", results, "--fail-if-slower", "fast")
    assert code == 2 and "percentage" in why


def test_a_gate_that_could_never_fail_is_refused(tmp_path):
    store = Store(tmp_path / "res")
    a, b = _run(store, A_IOPS[:3], A_P99[:3]), _run(store, B_IOPS[:3], B_P99[:3])
    code, _, why = _cli("compare", a, b, "--results", str(tmp_path / "res"),
                        "--fail-if-slower", "5%")
    assert code == 2 and "could never fail" in why and "at least 5 rounds" in why, why


def test_json_rows_carry_the_interval_the_factor_and_the_gate(two_runs):
    results, a, b = two_runs
    code, out, _ = _cli("compare", a, b, "--results", results, "--json", "--fail-if-slower", "5%")
    assert code == 1
    rows = {r["metric"]: r for r in json.loads(out.splitlines()[0])["rows"]}
    iops = rows["read_iops"]
    assert (iops["baseline"], iops["other"], iops["test"]) == (a, b, "Mann-Whitney U")
    assert iops["change_ci_lo"] < iops["change_pct"] < iops["change_ci_hi"]
    assert iops["gate"] == "slower" and rows["read_clat_p99"]["gate"] == "ok"
    assert rows["read_bw"]["gate"] is None and "slower" in iops["times"]


def test_runs_of_two_stores_and_a_stores_latest_run(tmp_path):
    a = _run(Store(tmp_path / "before"), A_IOPS, A_P99)
    b = _run(Store(tmp_path / "after"), B_IOPS, B_P99)
    code, out, _ = _cli("compare", f"{a}@{tmp_path / 'before'}", f"@{tmp_path / 'after'}")
    assert code == 0, out
    assert a in out and b in out and "× slower" in out
    code, _, why = _cli("compare", f"{a}@{tmp_path / 'nowhere'}", f"@{tmp_path / 'after'}")
    assert code == 2 and "no results store" in why
    assert not (tmp_path / "nowhere").exists()
    code, _, why = _cli("compare", f"{a}@", b, "--results", str(tmp_path / "after"))
    assert code == 2 and "RUN@RESULTS_DIR" in why


def test_the_same_run_id_in_two_stores_gets_two_columns(tmp_path):
    Store(tmp_path / "one").create_run(PLAN, ENV, run_id="20260101-000000-aaaa", source="test")
    Store(tmp_path / "two").create_run(PLAN, ENV, run_id="20260101-000000-aaaa", source="test")
    for where, iops in (("one", A_IOPS), ("two", B_IOPS)):
        Store(tmp_path / where).add_records(
            Record("20260101-000000-aaaa", "localhost", "ext4", "default", "fio", "randread", "{}",
                   it, "read_iops", v, "ops/s", "higher", None, 0.0) for it, v in enumerate(iops, 1))
    code, out, _ = _cli("compare", f"20260101@{tmp_path / 'one'}", f"20260101@{tmp_path / 'two'}")
    assert code == 0, out
    assert f"20260101-000000-aaaa@{tmp_path / 'one'}" in out and "× slower" in out


def test_notes_say_what_else_differs_and_when_a_host_was_busy(tmp_path):
    store = Store(tmp_path / "res")
    a = _run(store, A_IOPS, A_P99)
    busy = {**ENV, "kernel": "6.12.0-1-amd64", "tools": {"fio": "fio-3.38"},
            "load": {"loadavg": [3.9, 3.0, 2.0], "cpu_pressure_some": {"avg10": 42.0, "avg60": 30.0}}}
    b = _run(store, B_IOPS, B_P99, env=busy,
             plan=PLAN + '[suite.fio]\nrate_iops = "500"\n')
    code, out, _ = _cli("compare", a, b, "--results", str(tmp_path / "res"))
    assert code == 0, out
    text = " ".join(out.split())
    assert "kernel 6.1.0-18-amd64 → 6.12.0-1-amd64" in text and "fio fio-3.33 → fio-3.38" in text
    assert "suite fio: fio.rate_iops – → 500" in text
    assert f"box was busy with other work when run {b} started" in text
    assert "waited for a CPU 42% of the 10 s before" in text and "load average 3.9 on 2 CPUs" in text
    assert f"run {a} started" not in text      # the quiet one is not flagged


def test_html_page_has_the_table_the_notes_and_the_verdict(two_runs, tmp_path):
    results, a, b = two_runs
    page = tmp_path / "out" / "compare.html"
    code, out, _ = _cli("compare", a, b, "--results", results, "--html", str(page),
                        "--fail-if-slower", "5%")
    assert code == 1 and f"wrote {page}" in out
    html = page.read_text()
    assert "change [95% CI]" in html and "× slower" in html and "FAILED" in html
    assert "<svg" in html and "<script" not in html
    code, _, why = _cli("compare", a, b, "--results", results, "--html", "/proc/none/x.html")
    assert code == 2 and "cannot write" in why


def test_factor_wording():
    def row(ratio, lo, hi, better="higher", unit="ops/s"):
        return {"ratio": ratio, "ratio_ci_lo": lo, "ratio_ci_hi": hi, "better": better,
                "unit": unit}
    assert cmp.times_text(row(1.32, 1.27, 1.37)) == "1.32 ± 0.05× faster"
    assert cmp.times_text(row(1.32, 1.28, 1.38)) == "1.32 +0.06/−0.04× faster"
    assert cmp.times_text(row(0.5, 0.4, 0.625)) == "2.00 +0.50/−0.40× slower"
    assert cmp.times_text(row(0.5, 0.4, 0.625, "lower", "ns")) == "2.00 +0.50/−0.40× faster"
    assert cmp.times_text(row(1.1, math.nan, math.nan, "lower", "ratio")) == "1.10× worse"
    assert cmp.times_text(row(-1.0, math.nan, math.nan)) == ""


def test_a_metric_is_named_without_a_unit_its_values_do_not_show():
    """`fslab compare` printed "p99 write latency [ns]" above "239 µs" and "read bandwidth
    [B/s]" above "82.9 MiB/s": each value says its own unit."""
    r = {"workload": "ext4 fio:mixed", "metric_label": "p99 write latency", "unit": "ns",
         "better": "lower", "median_baseline": 239e3, "median_other": 2.61e6,
         "change_pct": 3.9, "change_ci_lo": math.nan, "change_ci_hi": math.nan,
         "n_baseline": 3, "n_other": 3, "p": 0.7, "significant": False}
    cells = cmp.table_cells(r, "a", "b")
    assert cells["metric"] == "p99 write latency" and "[" not in cells["metric"]
    assert (cells["a"], cells["b"]) == ("239 µs", "2.61 ms")


def test_two_runs_on_one_host_each_compare_the_hosts(tmp_path):
    """The same plan on h1, then on h2: one column per host, each case once."""
    from fslab.records import UnitKey
    store = Store(tmp_path / "res")
    runs = []
    for host, iops in (("h1", A_IOPS), ("h2", B_IOPS)):
        busy_here = {"loadavg": [9.0, 9.0, 9.0], "cpu_pressure_some": {"avg10": 80.0}}
        run_id = store.create_run(PLAN, {**ENV, "target": {"kind": "hosts"}, "load": busy_here},
                                  source="test")
        for case in ("randread", "seqwrite"):
            for it, v in enumerate(iops, 1):
                key = UnitKey(host, "ext4", "default", "fio", case, "{}", it)
                store.finish_unit(run_id, key, [Record(run_id, host, "ext4", "default", "fio", case,
                                                       "{}", it, "read_iops", v, "ops/s", "higher",
                                                       None, 0.0)], "done", None, 0.0, None)
        runs.append(run_id)
    r = CliRunner().invoke(app, ["compare", *runs, "--results", str(tmp_path / "res")],
                           env={"COLUMNS": "160"})
    assert r.exit_code == 0, r.output
    assert f"h2 ({runs[1]}) vs h1 ({runs[0]})" in r.stdout
    header = next(ln for ln in r.stdout.splitlines() if "metric" in ln)
    assert " h1 " in header and " h2 " in header
    rows = [ln for ln in r.stdout.splitlines() if "ext4 fio:randread" in ln or "ext4 fio:seqwrite" in ln]
    assert len(rows) == 2, r.stdout
    assert "busy" not in r.stdout   # the load is the controlling machine's, not the hosts'


def test_the_table_marks_the_rows_the_gate_tested_with_their_holm_p(tmp_path):
    """IOPS 20% lower with one overlapping round: its own test says p=0.032 and '× slower',
    but after Holm over the gate's 2 answer metrics p=0.063 and the gate passes; the table
    says which rows the gate tested and with which p, so the two do not contradict."""
    store = Store(tmp_path / "res")
    a = _run(store, A_IOPS, A_P99)
    b = _run(store, [80_000.0, 81_000.0, 82_000.0, 83_000.0, 101_500.0], B_P99)
    results = str(tmp_path / "res")
    page = tmp_path / "compare.html"
    code, out, _ = _cli("compare", a, b, "--results", results, "--fail-if-slower", "5%",
                        "--html", str(page))
    assert code == 0 and "passed" in out, out
    header = next(ln for ln in out.splitlines() if "change [95% CI]" in ln)
    assert header.rstrip(" ┃│").endswith("gate")
    iops = next(ln for ln in out.splitlines() if "read IOPS" in ln)
    assert "p=0.032" in iops and "×" in iops and "tested (Holm p=0.063)" in iops
    bw = next(ln for ln in out.splitlines() if "read bandwidth" in ln)
    assert "Holm" not in bw                             # not an answer metric: not tested
    assert "after Holm's correction over all of them" in out
    assert "tested (Holm p=0.063)" in page.read_text()
    code, out, _ = _cli("compare", a, b, "--results", results, "--json", "--fail-if-slower", "5%")
    rows = {r["metric"]: r for r in json.loads(out.splitlines()[0])["rows"]}
    assert rows["read_iops"]["p_gate"] == pytest.approx(0.0635, abs=1e-3)
    assert rows["read_bw"]["p_gate"] is None
