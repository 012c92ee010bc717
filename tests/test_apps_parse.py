"""The application suites' fast tier: their programs' real outputs parsed (captured on this
machine, tests/data/apps/), their options checked before any run, their answer."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from conftest import fslab_in_process, needs_root
from fslab import workloads
from fslab.errors import FslabError
from fslab.metrics import answer_metrics
from fslab.plan import SuiteSpec
from fslab.plan.profiles import get as profile
from fslab.workloads.apps.pgbench_output import parse_summary, transaction_latencies

DATA = Path(__file__).parent / "data" / "apps"


def test_pgbench_summary_of_a_tpcb_run():
    s = parse_summary((DATA / "pgbench-tpcb.txt").read_text())
    assert s.tps == pytest.approx(711.212594)
    assert s.transactions == 2128 and s.failed == 0
    assert s.latency_mean_ms == pytest.approx(2.812)


def test_pgbench_summary_of_a_select_only_run():
    s = parse_summary((DATA / "pgbench-select-only.txt").read_text())
    assert s.tps == pytest.approx(21619.844005) and s.transactions == 43061


def test_pgbench_summary_without_a_tps_line_is_a_step_failure():
    from fslab.errors import StepFailed
    with pytest.raises(StepFailed, match="tps"):
        parse_summary("pgbench: error: connection to server failed\n")


def test_pgbench_transaction_log_percentiles():
    logs = sorted(DATA.glob("pgbench-tx-log.*"))
    lat = transaction_latencies(logs)
    # the third column is each transaction's latency in µs, one file per thread
    us = sorted(int(line.split()[2]) for log in logs for line in log.read_text().splitlines())
    assert lat.count == len(us) == 400
    assert lat.max_s == pytest.approx(us[-1] / 1e6)
    assert lat.mean_s == pytest.approx(sum(us) / len(us) / 1e6)
    assert us[int(0.98 * len(us))] / 1e6 <= lat.p99_s <= us[-1] / 1e6


def test_pgbench_failed_transactions_are_left_out(tmp_path):
    log = tmp_path / "tx.1"
    log.write_text("0 1 1000 0 1795573995 191204\n0 2 failed 0 1795573995 192482\n"
                   "0 3 3000 0 1795573995 193168\n")
    lat = transaction_latencies([log])
    assert lat.count == 2 and lat.max_s == pytest.approx(0.003)


def _cases(**options):
    return workloads.get("pgbench").cases(SuiteSpec(kind="pgbench", **options), profile("smoke"))


def test_pgbench_cases_scale_with_the_profile_and_take_options():
    cases = _cases()
    assert [c.name for c in cases] == ["tpcb-like", "select-only"]
    assert cases[0].params == {"scale": 1, "clients": 4, "duration": 3}
    quick = workloads.get("pgbench").cases(SuiteSpec(kind="pgbench"), profile("quick"))
    assert quick[0].params["scale"] == 10
    ro = _cases(read_only=True, clients=8, duration=5)
    assert [c.name for c in ro] == ["select-only"] and ro[0].config.clients == 8
    # -j divides the clients evenly over at most the machine's CPUs
    assert 8 % ro[0].config.threads == 0
    commands = workloads.get("pgbench").describe(ro[0])["commands"]
    assert any("listen_addresses=" in c for c in commands)
    assert any(c.endswith("-S") and "-c 8" in c and "-T 5" in c for c in commands)


@pytest.mark.parametrize("options, said", [
    ({"clients": 0}, "clients = 0"), ({"clients": 500}, "to 90"), ({"scale": "big"}, "scale"),
    ({"duration": 1.5}, "duration"), ({"read_only": "yes"}, "read_only"),
    ({"workers": 3}, "unknown key"), ({"workloads": ["tpcc"]}, "tpcc")])
def test_pgbench_refuses_bad_options(options, said):
    with pytest.raises(FslabError, match=said):
        _cases(**options)


def test_a_rejected_option_is_refused_before_any_run_row(tmp_path):
    plan = tmp_path / "plan.toml"
    plan.write_text('[run]\nprofile = "smoke"\n[[filesystem]]\nname = "ext4"\n'
                    '[[suite]]\nkind = "pgbench"\nclients = 0\n')
    results = tmp_path / "results"
    p = fslab_in_process("run", str(plan), "--results", str(results), check=False)
    assert p.returncode != 0 and "clients = 0" in p.stderr
    db = results / "fslab.sqlite"
    assert not db.exists() or sqlite3.connect(db).execute("SELECT count(*) FROM runs").fetchone()[0] == 0


def test_the_answer_of_pgbench_is_tps_with_its_p99():
    present = {"tps", "latency_p99", "latency_mean", "transactions", "cpu_seconds",
               "device_write_bytes_per_transaction"}
    assert answer_metrics("pgbench", "tpcb-like", None, present) == ["tps", "latency_p99"]


def test_dbench_output():
    from fslab.workloads.apps.dbench import parse_output
    text = (DATA / "dbench-2-clients.txt").read_text()
    r = parse_output(text)
    assert r.throughput_mb_s == pytest.approx(282.854) and r.clients == 2
    assert r.max_latency_ms == pytest.approx(18.231)
    # the operation table's counts: NTCreateX 23842 ... Flush 1680
    table = text.split("----------------------------------------")[1].split("Throughput")[0]
    assert r.operations == sum(int(line.split()[1]) for line in table.strip().splitlines())


def test_dbench_without_a_result_is_a_step_failure():
    from fslab.errors import StepFailed
    from fslab.workloads.apps.dbench import parse_output
    with pytest.raises(StepFailed, match="no Throughput"):
        parse_output("dbench version 4.00\nfailed to open /nonexistent\n")


@pytest.mark.parametrize("benchmark, ops, count, p99", [
    ("fillrandom", 4130, 5000, 3581.82), ("overwrite", 3995, 5000, 1900.0),
    ("readrandom", 807232, 5000, 2.68)])
def test_db_bench_output(benchmark, ops, count, p99):
    from fslab.workloads.apps.rocksdb import parse_output
    r = parse_output((DATA / "db_bench-sync.txt").read_text(), benchmark)
    assert r.ops_per_s == ops and r.operations == count and r.p99_us == pytest.approx(p99)
    assert r.p50_us <= r.p99_us <= r.max_us
    assert r.assertions       # Debian's build says so before its numbers: said with them
    text = (DATA / "db_bench-sync.txt").read_text().replace("Assertions are enabled", "")
    assert not parse_output(text, benchmark).assertions


def test_db_bench_cases_refuse_an_unknown_benchmark():
    with pytest.raises(FslabError, match="readseqq"):
        workloads.get("rocksdb").cases(SuiteSpec(kind="rocksdb", workloads=["readseqq"]),
                                       profile("smoke"))
    cases = workloads.get("rocksdb").cases(SuiteSpec(kind="rocksdb"), profile("smoke"))
    sync = next(c for c in cases if c.name == "overwrite-sync")
    fill, run = workloads.get("rocksdb").describe(sync)["commands"]
    assert "--benchmarks=fillrandom" in fill and "--use_existing_db=0" in fill
    assert "--benchmarks=overwrite" in run and "--sync=1" in run and "--use_existing_db=1" in run


def test_sqlite_result_line():
    from fslab.workloads.apps.sqlite import parse_result
    r = parse_result((DATA / "sqlite-wal.json").read_text())
    assert r.journal_mode == "wal" and r.transactions == 2821
    assert r.tps == pytest.approx(2821 / 2.006440988000122)


@pytest.mark.parametrize("suite, options, said", [
    ("sqlite", {"rows": 0}, "rows = 0"), ("dbench", {"clients": 0}, "clients = 0"),
    ("rocksdb", {"keys": -1}, "keys = -1"), ("sqlite", {"workloads": ["truncate"]}, "truncate")])
def test_app_suites_refuse_bad_options(suite, options, said):
    with pytest.raises(FslabError, match=said):
        workloads.get(suite).cases(SuiteSpec(kind=suite, **options), profile("smoke"))


def test_a_missing_program_is_one_line_naming_its_package():
    from fslab.workloads.apps.programs import Program
    gone = Program("pgbench", "postgresql-15", "/nonexistent/pgbench")
    assert gone.missing() == "pgbench is not installed (Debian package postgresql-15)"
    assert gone.version() is None


def test_doctor_lists_each_application():
    import json
    out = json.loads(fslab_in_process("doctor", "--json").stdout)
    apps = out["applications"]
    assert set(apps) == {"pgbench", "sqlite3", "dbench", "db_bench"}
    for a in apps.values():   # a version, or the line naming the package
        assert a["version"] or a["package"] in a["missing"]


@needs_root()
def test_a_case_whose_image_does_not_fit_is_refused_before_any_run_row(tmp_path):
    """pgbench at a scale whose image (three times the database) is over the work
    directory's free space: refused with both sizes, before a run row or a loop image
    (it planned a 142 GiB image with 75 GiB free and started)."""
    import shutil
    free = shutil.disk_usage(tmp_path).free
    scale = free // (16 * 2**20) + 1      # the database alone is over the free space
    plan = tmp_path / "plan.toml"
    plan.write_text('[run]\nprofile = "smoke"\n[[filesystem]]\nname = "ext4"\n'
                    f'[[suite]]\nkind = "pgbench"\nworkloads = ["tpcb-like"]\nscale = {scale}\n')
    results, work = tmp_path / "results", tmp_path / "work"
    p = fslab_in_process("run", str(plan), "--results", str(results), "--workdir", str(work),
                         check=False)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "pgbench:tpcb-like needs a" in p.stderr and "free" in p.stderr, p.stderr
    db = results / "fslab.sqlite"
    assert not db.exists() or sqlite3.connect(db).execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    assert not work.exists() or not any(work.iterdir())


def test_a_signal_is_named_and_a_long_reason_is_cut_after_a_word():
    from fslab.metrics.format import clip
    from fslab.workloads.apps.process import exit_text
    assert exit_text(-9) == "killed by SIGKILL" and exit_text(1) == "exit 1"
    said = clip("postgres died (killed by SIGKILL); its log: LOG: database system is ready", 50)
    assert said == "postgres died (killed by SIGKILL); its log: LOG…"
    assert clip("short", 50) == "short"
