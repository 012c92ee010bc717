"""End to end: three real programs captured by the test itself (git clone of a local
repository, tar x + make of a tiny C project, SQLite inserts with fsync), replayed on
ext4 and xfs loop images at smoke through the CLI, the fidelity check holding on each."""
from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from conftest import leftovers, needs_root, run_fslab

pytestmark = [pytest.mark.e2e, needs_root()]

EXAMPLES = Path(__file__).parent / "data" / "replay_examples"


def capture(kind: str, tmp_path: Path) -> Path:
    d = tmp_path / f"dir-{kind}"
    d.mkdir()
    command = subprocess.run(["sh", str(EXAMPLES / "make_examples.sh"), kind, str(d)],
                             capture_output=True, text=True, check=True).stdout.strip()
    out = tmp_path / f"{kind}.replay"
    p = run_fslab("capture", "--out", str(out), "--dir", str(d), "--", "sh", "-c", command)
    assert f"{out}: " in p.stdout and "outside the directory, not replayed" in p.stdout
    return out


def test_three_captured_programs_replay_faithfully_on_ext4_and_xfs(state_dir, results, tmp_path):
    files = [capture(k, tmp_path) for k in ("git", "make", "sqlite")]
    args = [a for f in files for a in ("--replay", str(f))]
    p = run_fslab("run", *args, "--fs", "ext4,xfs", "--profile", "smoke", "--results",
                  str(results), "--workdir", str(tmp_path / "work"))
    assert "fidelity on" not in p.stdout, p.stdout
    db = sqlite3.connect(results / "fslab.sqlite")
    rows = db.execute("SELECT fs, \"case\", iteration, metric, value FROM records").fetchall()
    by_unit: dict[tuple, dict[str, float]] = {}
    for fs, case, it, metric, value in rows:
        by_unit.setdefault((fs, case, it), {})[metric] = value
    cases = {c for _, c, _ in by_unit}
    assert cases == {"git", "make", "sqlite"}
    assert {fs for fs, _, _ in by_unit} == {"ext4", "xfs"}
    for unit, m in by_unit.items():
        assert m["fidelity_differences"] == 0, unit
        assert m["replay_time"] > 0 and m["replay_ops_per_s"] > 0, unit
        assert m["op_open_p99"] >= m["op_open_p50"] > 0, unit
    sql = [m for (fs, c, _), m in by_unit.items() if c == "sqlite"]
    assert all(m["op_fdatasync_p50"] > 0 and m["replay_bytes_written"] > 600_000 for m in sql)
    # the fidelity file of a unit lists nothing and says what was issued
    art = db.execute("SELECT artifact FROM records WHERE metric='fidelity_differences' "
                     "LIMIT 1").fetchone()[0]
    fid = json.loads((results / art).read_text())
    assert fid["differences"] == [] and fid["issued"]["open"] > 0
    assert "replay_time" in p.stdout or "replay time" in p.stdout
    assert leftovers(str(tmp_path)) == []


def test_a_filesystem_that_refuses_an_operation_is_a_finding(state_dir, results, tmp_path):
    """An operation whose outcome differs from the capture's is a finding, listed with its
    errno: a capture edited so that its unlink failed with ENOENT; on ext4 it succeeds."""
    d = tmp_path / "d"
    d.mkdir()
    out = tmp_path / "w.replay"
    run_fslab("capture", "--out", str(out), "--dir", str(d), "--", "sh", "-c",
              "mkdir a && echo hi > a/f && rm a/f")
    text = out.read_text().replace('unlink "a/f"', 'unlink "a/f" !ENOENT')
    out.write_text(text)
    p = run_fslab("run", "--replay", str(out), "--fs", "ext4", "--profile", "smoke",
                  "--iterations", "1", "--results", str(results),
                  "--workdir", str(tmp_path / "work"))
    assert "fidelity on ext4: op" in p.stdout
    assert "(unlink a/f): succeeded here, failed with ENOENT when captured" in p.stdout
    db = sqlite3.connect(results / "fslab.sqlite")
    (n,) = db.execute("SELECT value FROM records WHERE metric='fidelity_differences'").fetchone()
    assert n == 1


def test_decide_races_options_on_a_captured_workload(state_dir, results, tmp_path):
    replay = capture("sqlite", tmp_path)
    p = run_fslab("decide", "--replay", str(replay), "--fs", "ext4,ext4:nb[-o nobarrier]",
                  "--allow", "trade", "--profile", "smoke", "--max-rounds", "4", "--stages", "1",
                  "--results", str(results), "--workdir", str(tmp_path / "work"))
    assert "racing 2 candidates: ext4, ext4:nb" in p.stdout
    # what the capture left out, before the race's first figure and before its decision
    said = [i for i, x in enumerate(p.stdout.splitlines()) if x.startswith("sqlite")
            and "capture: outside the directory, not replayed: read " in x]
    assert len(said) == 2 and said[0] < p.stdout.splitlines().index(
        next(x for x in p.stdout.splitlines() if x.startswith("the first "))), p.stdout
    # the decision's line names the metric raced, whatever the rounds showed (a winner, a
    # tie, or a race too noisy at smoke to decide its delta)
    verdict = next(line for line in p.stdout.splitlines()
                   if line.startswith(("Winner:", "Tie", "Choose", "Cannot decide", "No decision")))
    assert "total replay time" in verdict, p.stdout
    db = sqlite3.connect(results / "fslab.sqlite")
    n = db.execute("SELECT COUNT(*) FROM records WHERE metric='replay_time'").fetchone()[0]
    assert n >= 6
    assert db.execute("SELECT MAX(value) FROM records WHERE metric='fidelity_differences'"
                      ).fetchone()[0] == 0
    assert leftovers(str(tmp_path)) == []


MMAP_WRITER = """\
import mmap, os
fd = os.open('m', os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, 4 << 20)
m = mmap.mmap(fd, 4 << 20)
m[:] = b'y' * (4 << 20)
m.flush()
w = os.open('w', os.O_WRONLY | os.O_CREAT, 0o644)
os.write(w, b'z' * 204800)
os.fsync(w)
"""


def test_what_the_capture_left_out_is_said_first_and_in_the_answer(state_dir, results, tmp_path):
    """A program that writes 4 MiB through a shared mapping and 200 KiB by write(2): the
    run's answer says the capture's account before the replay's numbers and the loss in the
    answer line; the JSON report keeps the account."""
    import sys
    d = tmp_path / "d"
    d.mkdir()
    (tmp_path / "prog.py").write_text(MMAP_WRITER)
    out = tmp_path / "mm.replay"
    run_fslab("capture", "--out", str(out), "--dir", str(d), "--",
              sys.executable, str(tmp_path / "prog.py"))
    p = run_fslab("run", "--replay", str(out), "--fs", "ext4,xfs", "--profile", "smoke",
                  "--results", str(results), "--workdir", str(tmp_path / "work"))
    lines = p.stdout.splitlines()
    first_capture = next(i for i, x in enumerate(lines) if "replay=mm.replay — capture: LOST: 95%" in x)
    answer = next(i for i, x in enumerate(lines) if "replay=mm.replay — total replay time" in x)
    assert first_capture < answer, p.stdout
    answer_line = " ".join(" ".join(lines[answer:answer + 4]).split())   # as wrapped
    assert "⚠ replay of a partial capture: 95% of the command's bytes in the directory not " \
           "replayed (mmap'd files)" in answer_line
    assert any("mmap'd, page I/O not replayed: m (4.0 MiB, shared writable)" in x
               for x in lines[first_capture:answer])
    run_id = sqlite3.connect(results / "fslab.sqlite").execute(
        "SELECT run_id FROM runs").fetchone()[0]
    js = tmp_path / "r.json"
    run_fslab("report", run_id, "--results", str(results), "--json", str(js))
    entry = json.loads(js.read_text())["headline"][0]
    assert entry["capture"]["lost"] and entry["capture"]["account"]["mmaps"]["m"][1] == 4 << 20
    assert leftovers(str(tmp_path)) == []
