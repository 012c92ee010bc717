"""The application suites end to end: real PostgreSQL and SQLite on small loop images
(ext4, xfs) at smoke, a postmaster killed mid-run, Ctrl-C and --resume. Each test checks
that no server process, mount or loop device is left."""
from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import time
from pathlib import Path

import pytest

from conftest import fslab_cmd, leftovers, needs_root, run_fslab, sigint_as_at_a_terminal

pytestmark = [pytest.mark.e2e, needs_root()]

SHORT = 2      # seconds of pgbench / SQLite per unit: CI has a time budget


@pytest.fixture
def work():
    """The run's work directory, outside pytest's base temp: the programs run as their own
    users, whom fslab lets walk down to it (o+x on each parent), and any other pytest
    session starting meanwhile takes that back from /tmp/pytest-of-root (pytest makes it
    0700 again), which failed a PostgreSQL start with 'Permission denied'."""
    import shutil
    import tempfile
    d = Path(tempfile.mkdtemp(prefix="fslab-apps-test-", dir="/var/tmp"))
    yield d / "work"
    shutil.rmtree(d, ignore_errors=True)


def _plan(tmp_path: Path, fs: str, suites: str, iterations: int = 1) -> Path:
    plan = tmp_path / "plan.toml"
    fss = "".join(f'[[filesystem]]\nname = "{f}"\n' for f in fs.split(","))
    plan.write_text(f'[run]\nprofile = "smoke"\niterations = {iterations}\n{fss}{suites}')
    return plan


def _servers(tag: str) -> list[str]:
    """Processes of a postmaster, pgbench or SQLite workload started under `tag`, and the
    postgres user's processes of such a postmaster's session, or of one whose postmaster is
    gone (a backend's title names no directory; another run's clusters are not counted)."""
    out = subprocess.run(["ps", "-ww", "-eo", "pid,pgid,user,args"], capture_output=True,
                         text=True).stdout
    procs = [line.split(None, 3) + [""] * (4 - len(line.split(None, 3)))
             for line in out.splitlines()[1:]]
    args = {pid: a for pid, _, _, a in procs}
    return [" ".join(p) for p in procs if "ps -eo" not in p[3] and (
        tag in p[3] or p[2] == "postgres" and (p[1] not in args or tag in args[p[1]]))]


def _postmaster(tag: str) -> tuple[int, str] | None:
    """(pid, socket directory) of the postmaster whose data directory is under `tag`."""
    for line in _servers(tag):
        pid, _, _, args = line.split(None, 3)
        if "/postgres -D" in args:
            return int(pid), args.rsplit("unix_socket_directories=", 1)[-1].split()[0]
    return None


def _pgbench_running(tag: str) -> int | None:
    """The postmaster's pid once pgbench's timed run talks to it (its clients connected)."""
    found = _postmaster(tag)
    if found and any("pgbench -n" in line for line in _servers(found[1])):
        return found[0]
    return None


def _units(results: Path) -> list[tuple]:
    db = sqlite3.connect(results / "fslab.sqlite")
    return db.execute("SELECT fs, \"case\", status, message FROM units ORDER BY fs, \"case\"").fetchall()


def _estimates_are_what_units_took(plan: Path, results: Path, tmp_path: Path) -> None:
    """The dry run's duration of each case from its options (no earlier run to go by) is
    what its units took here: not over 1.6x or 1.5 s beyond (it said 2-8x: pgbench 11 s
    for 4 s), nor under a third (the tests beside this one on a busy CI machine slow its
    units down, never up)."""
    dry = json.loads(run_fslab("run", str(plan), "--dry-run", "--json", "--results",
                               str(tmp_path / "nothing-run")).stdout)
    db = sqlite3.connect(results / "fslab.sqlite")
    for c in dry["cases"]:
        took = statistics.median(f - s for s, f in db.execute(
            'SELECT started, finished FROM units WHERE fs = ? AND suite = ? AND "case" = ?',
            (c["filesystem"], c["suite"], c["case"])))
        said = c["seconds_each"]
        assert took / 3 <= said <= max(1.6 * took, took + 1.5), (c["suite"], c["case"], took, said)


def _values(results: Path, metric: str) -> dict[tuple, float]:
    db = sqlite3.connect(results / "fslab.sqlite")
    return {(fs, case): v for fs, case, v in db.execute(
        "SELECT fs, \"case\", value FROM records WHERE metric = ?", (metric,))}


def test_pgbench_and_sqlite_on_ext4_and_xfs(state_dir, results, tmp_path, work):
    plan = _plan(tmp_path, "ext4,xfs",
                 f'[[suite]]\nkind = "pgbench"\nduration = {SHORT}\nclients = 2\n'
                 f'[[suite]]\nkind = "sqlite"\nduration = {SHORT}\n', iterations=2)
    p = run_fslab("run", str(plan), "--results", str(results), "--workdir", str(work),
                  timeout=600)
    failed = [u for u in _units(results) if u[2] != "done"]
    assert not failed, "\n".join(map(str, failed))
    assert len(_units(results)) == 16
    tps = _values(results, "tps")
    assert set(tps) == {(fs, c) for fs in ("ext4", "xfs")
                        for c in ("tpcb-like", "select-only", "wal", "delete")}
    assert all(v > 0 for v in tps.values()), tps
    # select-only reads: tens of times the TPC-B-like rate, nothing written per transaction
    # worth a commit; a TPC-B-like commit writes its WAL
    per_tx = _values(results, "device_write_bytes_per_transaction")
    assert per_tx[("ext4", "tpcb-like")] > 4096
    assert tps[("ext4", "select-only")] > 5 * tps[("ext4", "tpcb-like")]
    assert all(v > 0 for v in _values(results, "latency_p99").values())
    assert all(v > 0 for v in _values(results, "server_cpu_seconds").values())
    # the answer line: tps with the p99 beside it, for every application case
    for case in ("pgbench:tpcb-like", "pgbench:select-only", "sqlite:wal", "sqlite:delete"):
        line = next(l for l in p.stdout.splitlines() if l.strip().startswith(case))
        assert "transactions per second" in line, line
    assert "p99 transaction latency" in next(
        l for l in p.stdout.splitlines() if l.strip().startswith("pgbench:tpcb-like"))
    env = json.loads(sqlite3.connect(results / "fslab.sqlite").execute(
        "SELECT environment FROM runs").fetchone()[0])
    said = env["workloads"]["pgbench:tpcb-like"]
    assert said["postgres_settings"]["fsync"] == "on"
    assert said["postgres_settings"]["synchronous_commit"] == "on"
    assert said["postgres_settings"]["full_page_writes"] == "on"
    assert "RAM" in said["database_vs_ram"]
    # the small database is in the page cache: select-only's I/O never reaches the filesystem
    assert said["filesystem_io"] is True
    assert env["workloads"]["pgbench:select-only"]["filesystem_io"] is False
    _estimates_are_what_units_took(plan, results, tmp_path)
    # the raw output is kept: pgbench's summary, the server's log, every transaction
    run_dir = next((results / "runs").iterdir())
    assert list(run_dir.rglob("pgbench.txt")) and list(run_dir.rglob("transactions.log.gz"))
    assert any("ready to accept connections" in f.read_text() for f in run_dir.rglob("postgres.log"))
    run_id = run_dir.name
    html = tmp_path / "report.html"
    run_fslab("report", run_id, "--results", str(results), "--html", str(html))
    assert "transactions per second" in html.read_text()
    # compare takes two runs: a second, shorter one of SQLite alone
    # (the same case as the first run's: its params, duration included, are the case's key)
    again = _plan(tmp_path, "ext4,xfs", '[[suite]]\nkind = "sqlite"\nworkloads = ["wal"]\n'
                  f'duration = {SHORT}\n')
    run_fslab("run", str(again), "--results", str(results), "--workdir", str(work), timeout=300)
    other = next(r.name for r in (results / "runs").iterdir() if r.name != run_id)
    c = run_fslab("compare", run_id, other, "--results", str(results))
    assert "sqlite" in c.stdout and "transactions per second" in c.stdout
    assert not leftovers(str(work)) and not _servers(str(work))


def test_a_killed_postmaster_fails_its_unit_and_the_next_runs(state_dir, results, tmp_path, work):
    plan = _plan(tmp_path, "ext4,xfs",
                 '[[suite]]\nkind = "pgbench"\nworkloads = ["tpcb-like"]\nduration = 8\n'
                 'clients = 2\n')
    proc = subprocess.Popen([*fslab_cmd(), "run", str(plan), "--results", str(results),
                             "--workdir", str(work)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    deadline, killed = time.time() + 240, None
    while time.time() < deadline and killed is None:
        pid = _pgbench_running(str(work))
        if pid:
            time.sleep(1)
            os.kill(pid, signal.SIGKILL)
            killed = pid
        time.sleep(0.1)
    out, _ = proc.communicate(timeout=300)
    assert killed, out
    units = _units(results)
    failed = [u for u in units if u[2] == "failed"]
    assert len(failed) == 1 and len(units) == 2, units
    msg = failed[0][3]
    # the server's own log's last lines, not a traceback
    assert msg.startswith("postgres died") and "its log:" in msg and "Traceback" not in msg, msg
    # a signal is named (it read 'exit -9'), the log's lines without their time and pid
    assert msg.startswith("postgres died (killed by SIGKILL)"), msg
    assert not re.search(r"UTC \[\d+\]", msg) and len(msg) < 600, msg
    # said as it happened and once after the run, in the answer, cut after a whole word
    # (the run's summary said it a third time, the answer cut it mid-word)
    flat = " ".join(out.split())
    assert flat.count("died (killed by SIGKILL)") == 2, out
    answer = flat.split("left out of every verdict: ", 1)[1]
    assert re.match(r"xfs pgbench:tpcb-like #1: postgres died [^…]{100,240}…", answer), answer
    last_word = answer.split("…")[0].split()[-1]
    assert last_word in [w.rstrip("|,;:") for w in msg.split()], answer
    assert [u[2] for u in units if u not in failed] == ["done"]
    assert "$ " not in msg, "the tail is the server's own log, not fslab's commands"
    status = sqlite3.connect(results / "fslab.sqlite").execute("SELECT status FROM runs").fetchone()[0]
    assert status == "finished-with-failures"
    assert not leftovers(str(work)) and not _servers(str(work))
    assert json.loads((state_dir / "resources.json").read_text() or "[]") == []


def test_ctrl_c_stops_the_server_and_resume_finishes(state_dir, results, tmp_path, work):
    plan = _plan(tmp_path, "ext4",
                 '[[suite]]\nkind = "pgbench"\nworkloads = ["select-only"]\nduration = 6\n')
    proc = subprocess.Popen([*fslab_cmd(), "run", str(plan), "--results", str(results),
                             "--workdir", str(work)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, preexec_fn=sigint_as_at_a_terminal)
    deadline = time.time() + 240
    while time.time() < deadline and not _pgbench_running(str(work)):
        time.sleep(0.1)
    time.sleep(1)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert not leftovers(str(work)) and not _servers(str(work)), "the server must stop"
    db = sqlite3.connect(results / "fslab.sqlite")
    run_id, status = db.execute("SELECT run_id, status FROM runs").fetchone()
    assert status == "interrupted"
    run_fslab("run", "--resume", run_id, "--results", str(results), "--workdir", str(work),
              timeout=300)
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "finished"
    assert _values(results, "tps")[("ext4", "select-only")] > 0
    assert not leftovers(str(work)) and not _servers(str(work))


def test_dbench_and_db_bench_on_ext4(state_dir, results, tmp_path, work):
    plan = _plan(tmp_path, "ext4",
                 '[[suite]]\nkind = "dbench"\nclients = 2\nduration = 2\n'
                 '[[suite]]\nkind = "rocksdb"\nworkloads = ["fillrandom", "overwrite-sync", '
                 '"readrandom"]\nkeys = 20000\nduration = 1\n')
    p = run_fslab("run", str(plan), "--results", str(results), "--workdir", str(work), timeout=300)
    failed = [u for u in _units(results) if u[2] != "done"]
    assert not failed and len(_units(results)) == 4, _units(results)
    # Debian's db_bench checks assertions: said before the answer's numbers, not only in its log
    flat = " ".join(p.stdout.split())
    assert "measured: rocksdb:fillrandom: db_bench as built by its package checks assertions" in flat
    # its p99 is an operation's, in the verdicts as in its table (the answer said 'transaction')
    assert "transaction latency" not in flat.split("fslab verdicts")[1]
    assert _values(results, "throughput")[("ext4", "client.txt")] > 1e6
    assert _values(results, "max_latency")[("ext4", "client.txt")] > 0
    ops = _values(results, "ops")
    # a write that waits for its WAL fsync is far slower than one that does not
    assert ops[("ext4", "fillrandom")] > 5 * ops[("ext4", "overwrite-sync")] > 0
    per_op = _values(results, "device_write_bytes_per_operation")
    assert per_op[("ext4", "overwrite-sync")] >= 512      # at least a sector per synced put
    # counted to a durable end (a syncfs before the counters are read): every put's key and
    # value is in the WAL on the device (read at exit: 34 B per 116-byte put, writeback's timing)
    assert per_op[("ext4", "fillrandom")] >= 16 + 100
    assert all(v > 0 for v in _values(results, "latency_p99").values())
    _estimates_are_what_units_took(plan, results, tmp_path)
    assert not leftovers(str(work)) and not _servers(str(work))


def test_pgbench_counts_to_its_checkpoint_and_says_its_settings(state_dir, results, tmp_path, work):
    """The counted region ends at a durable end: a CHECKPOINT and a syncfs after pgbench, so
    the shutdown checkpoint finds the transactions' pages written already (it wrote 1,688
    buffers, uncounted, when the counters were read at pgbench's exit); the settings are
    recorded as PostgreSQL says them (shared_buffers was '163848kB')."""
    plan = _plan(tmp_path, "ext4", '[[suite]]\nkind = "pgbench"\nworkloads = ["tpcb-like"]\n'
                 f'duration = {SHORT}\nclients = 2\n')
    run_fslab("run", str(plan), "--results", str(results), "--workdir", str(work), timeout=300)
    assert [u[2] for u in _units(results)] == ["done"], _units(results)
    log = next((results / "runs").rglob("postgres.log")).read_text()
    wrote = [int(n) for n in re.findall(r"checkpoint complete: wrote (\d+) buffers", log)]
    shutdown = log.rsplit("checkpoint starting: shutdown", 1)[1]
    last = int(re.search(r"checkpoint complete: wrote (\d+) buffers", shutdown)[1])
    assert max(wrote) > 100 and last <= 20, wrote
    env = json.loads(sqlite3.connect(results / "fslab.sqlite").execute(
        "SELECT environment FROM runs").fetchone()[0])
    settings = env["workloads"]["pgbench:tpcb-like"]["postgres_settings"]
    assert settings["shared_buffers"] == "128MB" and settings["max_wal_size"] == "1GB", settings
    # the answer says a buffered program's I/O is explained below: the HTML says it in the
    # page (it was only inside the folded environment JSON)
    html = tmp_path / "report.html"
    run_id = next((results / "runs").iterdir()).name
    run_fslab("report", run_id, "--results", str(results), "--html", str(html))
    page = html.read_text()
    said = re.search(r'<p class="note">pgbench:tpcb-like: database \d+ MiB, RAM \d+ MiB: it fits', page)
    assert said and said.start() < page.index('id="environment"'), page[:3000]
    assert not leftovers(str(work)) and not _servers(str(work))
