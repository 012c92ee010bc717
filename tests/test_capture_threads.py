"""Threads that reuse each other's fd numbers, captured whole: an open still unfinished in
one thread while another closes the same fd number binds after that close (the kernel's
order), so no write or fsync is lost and every close stays on the thread that made it."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import fslab_in_process
from fslab.capture import format as fmt
from fslab.capture.format import InitEntry
from fslab.capture.interpret import Interpreter
from fslab.capture.strace import parse_lines

WRITER = Path(__file__).parent / "data" / "strace" / "thread_writer.py"
ROOT = "/tmp/d"

# strace's own lines (fslab's flags) of the race: two threads of process 100 (one fd
# table), thread 101's open of f2 entered before thread 102's close of fd 4 and returning
# fd 4 after it
_CLONE = ("100 0.99999{n} clone3({{flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|"
          "CLONE_THREAD|CLONE_SYSVSEM, exit_signal=0}} => {{parent_tid=[10{n}]}}, 88) = 10{n}\n")
RACE = _CLONE.format(n=1) + _CLONE.format(n=2) + """\
101 1.000000 openat(AT_FDCWD</tmp/d>, "f1", O_WRONLY|O_CREAT, 0644) = 3</tmp/d/f1>
101 1.000100 write(3</tmp/d/f1>, ""..., 16384) = 16384
101 1.000200 fsync(3</tmp/d/f1>) = 0
102 1.000300 openat(AT_FDCWD</tmp/d>, "f0", O_WRONLY|O_CREAT, 0644) = 4</tmp/d/f0>
101 1.000400 close(3</tmp/d/f1>) = 0
101 1.000500 openat(AT_FDCWD</tmp/d>, "f2", O_WRONLY|O_CREAT, 0644 <unfinished ...>
102 1.000600 close(4</tmp/d/f0>) = 0
101 1.000700 <... openat resumed>) = 4</tmp/d/f2>
101 1.000800 write(4</tmp/d/f2>, ""..., 16384) = 16384
101 1.000900 fsync(4</tmp/d/f2>) = 0
101 1.001000 close(4</tmp/d/f2>) = 0
"""


def _replay_of(trace: str) -> fmt.Replay:
    calls, skipped = parse_lines(trace.splitlines(keepends=True))
    assert skipped == 0
    interp = Interpreter(ROOT, {".": InitEntry("dir", ".")})
    interp.feed_all(calls)
    return interp.replay({})


def test_an_fd_returned_after_another_threads_close_is_bound_after_it():
    r = _replay_of(RACE)
    ops = [(o.thread, o.kind, o.args) for o in r.ops]
    assert r.outside == 0, ops
    assert {k: n for k, n in r.counts().items() if k != "spawn"} == \
        {"open": 3, "write": 2, "fsync": 2, "close": 3}
    # f2's handle (3) is written, synced and closed by thread 2 (pid 101), which opened it;
    # f0's (2) closed by thread 3 (pid 102)
    assert [(t, k) for t, k, a in ops if a[:1] == (3,) and k != "spawn"] == [
        (2, "open"), (2, "write"), (2, "fsync"), (2, "close")]
    assert (3, "close", (2,)) in ops


def _capture_writer(tmp_path: Path, n: int, threads: int = 4, files: int = 200) -> fmt.Replay:
    d = tmp_path / f"d{n}"
    d.mkdir()
    out = tmp_path / f"w{n}.replay"
    p = fslab_in_process("capture", "--out", str(out), "--dir", str(d), "--",
                         sys.executable, str(WRITER), str(threads), str(files), "16384",
                         check=False)
    assert p.returncode == 0, p.stderr
    return fmt.load(out)


def _assert_whole(r: fmt.Replay, threads: int, files: int) -> None:
    counts = r.counts()
    total = threads * files
    assert (counts["open"], counts["write"], counts["fsync"], counts["close"]) == \
        (total, total, total, total), counts
    assert r.data_bytes()[1] == total * 16384
    # each file's calls on one thread: the one that opened it
    opener: dict[int, int] = {}
    for o in r.ops:
        if o.kind == "open":
            opener[o.args[0]] = o.thread
        elif o.kind in ("write", "fsync", "close"):
            assert opener[o.args[0]] == o.thread, o


def test_a_real_four_thread_writer_is_captured_whole(tmp_path):
    r = _capture_writer(tmp_path, 0)
    _assert_whole(r, 4, 200)


@pytest.mark.e2e   # 20 captures of 800 fsync'd files: too long for the fast tier
def test_twenty_captures_of_the_four_thread_writer_lose_nothing(tmp_path):
    for n in range(20):
        _assert_whole(_capture_writer(tmp_path, n), 4, 200)
