"""The replayer on a plain directory (no filesystem made): the shipped examples captured
and replayed with the fidelity check holding, cross-thread order, --pace, bad input."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import fslab_in_process
from fslab.capture.format import Op, Replay, load
from fslab.errors import FslabError
from fslab.workloads.replay import check_pace, fidelity
from fslab.workloads.support.replayer import (Replayer, cross_thread_order, make_initial_state,
                                              snapshot_paths)

EXAMPLES = Path(__file__).parent / "data" / "replay_examples"


def _fslab(*args):
    return fslab_in_process(*args, check=False)


def _capture(kind: str, tmp_path: Path) -> Replay:
    d = tmp_path / f"dir-{kind}"
    d.mkdir()
    command = subprocess.run(["sh", str(EXAMPLES / "make_examples.sh"), kind, str(d)],
                             capture_output=True, text=True, check=True).stdout.strip()
    out = tmp_path / f"{kind}.replay"
    p = _fslab("capture", "--out", str(out), "--dir", str(d), "--", "sh", "-c", command)
    assert p.returncode == 0, p.stderr
    return load(out)


def _replay(r: Replay, root: Path):
    root.mkdir()
    make_initial_state(root, r.init, 7)
    before = snapshot_paths(root)
    out = Replayer(r, root, 7).run()
    return out, fidelity(r, out, before, snapshot_paths(root))


@pytest.mark.parametrize("kind", ["git", "make", "sqlite"])
def test_examples_replay_with_no_difference(kind, tmp_path):
    r = _capture(kind, tmp_path)
    out, diffs = _replay(r, tmp_path / "replayed")
    assert diffs == []
    assert out.bytes_written == r.data_bytes()[1] > 0
    assert out.operations == sum(n for k, n in r.counts().items() if k not in ("spawn", "wait"))
    if kind == "sqlite":   # each commit syncs: the latencies the answer metrics come from
        assert len(out.latencies_ns["fdatasync"]) >= 40
    if kind == "git":      # a local clone hard-links objects
        assert r.counts()["link"] > 0


def test_a_failure_the_capture_did_not_see_is_listed(tmp_path):
    r = Replay(ops=[Op(0.0, 1, "mkdir", ("a", 0o755)), Op(0.1, 1, "rmdir", ("b",)),
                    Op(0.2, 1, "open", (1, "a/f", "O_WRONLY|O_CREAT", 0o644)),
                    Op(0.3, 1, "write", (1, None, 5000)), Op(0.4, 1, "close", (1,))],
                   meta={"created": 2, "removed": 0})
    out, diffs = _replay(r, tmp_path / "x")
    assert diffs == ["op 2 (rmdir b): failed with ENOENT here, succeeded when captured"]
    assert out.bytes_written == 5000 and (tmp_path / "x" / "a" / "f").stat().st_size == 5000


def test_another_threads_earlier_call_on_the_same_file_comes_first():
    ops = [Op(0.0, 1, "spawn", (2,)), Op(0.1, 2, "open", (1, "d/f", "O_WRONLY|O_CREAT", 0)),
           Op(0.2, 2, "write", (1, None, 10)), Op(0.3, 2, "close", (1,)),
           Op(0.31, 1, "stat", ("other",)), Op(0.4, 1, "unlink", ("d/f",)),
           Op(0.5, 1, "mkdir", ("e", 0)), Op(0.6, 2, "stat", ("e/g",))]
    assert cross_thread_order(ops) == {5: 3, 7: 6}


def test_threads_replay_what_they_share_in_order(tmp_path):
    """Thread 2 writes and closes a file, thread 1 removes it: without the order the
    removal ran first (found replaying a Python program's worker thread)."""
    ops = [Op(0.0, 1, "spawn", (2,)), Op(0.0, 1, "mkdir", ("d", 0o755))]
    ops += [Op(0.1, 2, "open", (1, "d/f", "O_WRONLY|O_CREAT", 0o644))]
    ops += [Op(0.1 + i / 1000, 2, "write", (1, i * 4096, 4096)) for i in range(200)]
    ops += [Op(0.4, 2, "close", (1,)), Op(0.5, 1, "unlink", ("d/f",))]
    for _ in range(5):
        root = tmp_path / f"r{_}"
        out, diffs = _replay(Replay(ops=ops), root)
        assert diffs == [] and out.issued["write"] == 200


def test_pace_refuses_a_schedule_that_goes_backwards():
    r = Replay(ops=[Op(0.5, 1, "stat", ("a",)), Op(0.2, 1, "stat", ("b",))])
    with pytest.raises(FslabError, match=r"W.replay: --pace cannot keep this schedule: "
                                         r"operation 2 of thread 1 is due at 0.200000 s"):
        check_pace(r, "W.replay")
    check_pace(Replay(ops=[Op(0.5, 1, "stat", ("a",)), Op(0.2, 2, "stat", ("b",))]), "W")


def test_pace_keeps_the_captured_gaps(tmp_path):
    r = Replay(ops=[Op(0.0, 1, "mkdir", ("a", 0o755)), Op(0.3, 1, "rmdir", ("a",))])
    (tmp_path / "p").mkdir()
    out = Replayer(r, tmp_path / "p", 1, pace=True).run()
    assert 0.3 <= out.elapsed_s < 1.0


def test_run_refuses_bad_replay_input_in_one_line(tmp_path):
    other = tmp_path / "old.replay"
    other.write_text("fslab-replay 0\nops\n0.0 1 stat \"a\"\n")
    p = _fslab("run", "--replay", str(other), "--fs", "ext4", "--dry-run")
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        f"fslab: {other}: replay format version 0, this fslab reads versions 1 and 2: "
        "capture the command again with this fslab"]
    p = _fslab("run", "--pace", "--fs", "ext4", "--dry-run")
    assert p.returncode == 2
    assert "--pace paces a replay: give --replay W.replay" in p.stderr
    back = tmp_path / "back.replay"
    back.write_text("fslab-replay 1\nops\n0.5 1 stat \"a\"\n0.2 1 stat \"b\"\n")
    p = _fslab("run", "--replay", str(back), "--pace", "--fs", "ext4", "--dry-run")
    assert p.returncode == 2 and "--pace cannot keep this schedule" in p.stderr
    p = _fslab("run", "--replay", str(back), "--fs", "ext4", "--dry-run")
    assert p.returncode == 0, p.stderr
    assert "replay" in p.stdout


def test_compressible_data_has_the_share_of_zeros_asked():
    import zlib
    from fslab.workloads.support.replayer import Payload
    random_data = bytes(Payload(1, 1 << 16).buf)
    half = bytes(Payload(1, 1 << 16, 0.5).buf)
    assert len(zlib.compress(random_data)) > 0.99 * len(random_data)
    assert half[2048:4096] == bytes(2048) and half[:2048] != bytes(2048)
    assert len(zlib.compress(half)) < 0.55 * len(half)


def test_a_plans_replay_file_is_relative_to_the_plan(tmp_path, monkeypatch):
    """A plan's `file = "W.replay"` was read relative to where fslab ran, so the same plan
    named another file (or none) from another directory; it is the plan's, as job files are."""
    from fslab import plan as plans
    d = tmp_path / "plans"
    d.mkdir()
    (d / "w.toml").write_text('[[filesystem]]\nname = "ext4"\n\n[[suite]]\nkind = "replay"\n'
                              'file = "captures/w.replay"\n')
    monkeypatch.chdir(tmp_path)
    plan = plans.load(d / "w.toml")
    assert plan.suite[0].options["file"] == str(d / "captures" / "w.replay")
    (d / "abs.toml").write_text('[[filesystem]]\nname = "ext4"\n\n[[suite]]\nkind = "replay"\n'
                                f'file = "{tmp_path / "w.replay"}"\n')
    assert plans.load(d / "abs.toml").suite[0].options["file"] == str(tmp_path / "w.replay")


def test_no_write_amplification_without_device_writes():
    """Writes left dirty at the end never reach the device: no ratio is recorded (decide
    showed `write ampl. 0.00×` as if measured); with device writes it is their ratio."""
    from fslab.workloads.replay import ReplaySuite
    from fslab.workloads.support.replayer import Outcome
    suite = ReplaySuite()
    out = Outcome(1.0, issued={"write": 1}, bytes_written=4096)
    m = suite.metrics.measure
    none = suite._measurements(out, [m("device_write_bytes", 0.0)])
    assert "write_amplification" not in {x.metric for x in none}
    some = suite._measurements(out, [m("device_write_bytes", 8192.0)])
    assert [x.value for x in some if x.metric == "write_amplification"] == [2.0]


def test_the_unit_estimate_comes_from_the_operations_not_the_captured_time():
    """2,000 commits captured in 60 s under strace: the unit issues 2,000 syncs and 8,000
    other calls, seconds of work (the captured time said a minute)."""
    from fslab.workloads.replay import UNIT_FIXED_S, unit_seconds
    ops = [Op(i * 0.006, 1, "write", (1, None, 4096)) for i in range(8000)] + \
          [Op(48 + i * 0.006, 1, "fdatasync", (1,)) for i in range(2000)]
    r = Replay(ops=[Op(0.0, 1, "open", (1, "db", "O_RDWR|O_CREAT", 0o644)), *ops])
    assert r.duration == pytest.approx(60, abs=0.1)
    assert UNIT_FIXED_S < unit_seconds(r, pace=False) < 15
    assert unit_seconds(r, pace=True) >= 60


def test_the_thread_count_names_threads_that_only_start_or_wait():
    r = Replay(ops=[Op(0.0, 1, "spawn", (2,)), Op(0.1, 2, "spawn", (3,)),
                    Op(0.2, 3, "mkdir", ("a", 0o755)), Op(0.3, 2, "wait", (3,)),
                    Op(0.4, 1, "spawn", (4,))])
    assert r.thread_counts() == (1, 3)
