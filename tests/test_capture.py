"""fslab capture: strace's real output parsed into a replay, the replay format, bad input.

tests/data/strace/sample.trace.gz is real strace 6.1 output (fslab's own strace flags) of
tests/data/strace/sample.sh run in /tmp/fslab-strace-sample, which held input.txt (16 bytes):
a shell's redirections and children, cat's copy_file_range, mv, ln -s, rm, and a Python
process whose two threads each pwrite and fsync their own file."""
from __future__ import annotations

import gzip
import os
import sys
from pathlib import Path

import pytest

from conftest import fslab_in_process
from fslab.capture import format as fmt
from fslab.capture.format import InitEntry
from fslab.capture.interpret import Interpreter
from fslab.capture.strace import parse_lines, split_args
from fslab.errors import FslabError

DATA = Path(__file__).parent / "data" / "strace"
ROOT = "/tmp/fslab-strace-sample"


def sample_replay():
    with gzip.open(DATA / "sample.trace.gz", "rt") as f:
        calls, skipped = parse_lines(f)
    assert skipped == 0
    interp = Interpreter(ROOT, {".": InitEntry("dir", "."),
                                "input.txt": InitEntry("file", "input.txt", 16),
                                "unrelated": InitEntry("file", "unrelated", 9)})
    interp.feed_all(calls)
    return interp.replay({"command": ["sh", "sample.sh"]})


def test_args_split_at_top_level_only():
    assert split_args('AT_FDCWD</tmp/a, b>, "x, y", {st_mode=S_IFREG|0644, st_size=3, ...}, 0') \
        == ["AT_FDCWD</tmp/a, b>", '"x, y"', "{st_mode=S_IFREG|0644, st_size=3, ...}", "0"]
    assert split_args('3</tmp/d/x>, ""..., 4096, 8192') == ["3</tmp/d/x>", '""...', "4096", "8192"]


def test_unfinished_and_resumed_halves_are_joined():
    calls, skipped = parse_lines([
        "10 1.000000 wait4(-1,  <unfinished ...>\n",
        "11 1.100000 mkdir(\"d\", 0777) = 0\n",
        "10 1.200000 <... wait4 resumed>[{WIFEXITED(s) && WEXITSTATUS(s) == 0}], 0, NULL) = 11\n",
        "11 1.300000 +++ exited with 0 +++\n"])
    assert skipped == 0
    # the wait takes effect when it returns, after the child's mkdir; its time is its entry
    assert [(c.pid, c.t, c.done, c.name, c.ret) for c in calls] == [
        (11, 1.1, 1.1, "mkdir", "0"), (10, 1.0, 1.2, "wait4", "11")]
    assert calls[1].args[0] == "-1"


def test_real_trace_becomes_the_commands_file_operations():
    r = sample_replay()
    ops = [(o.kind, o.args, o.errno) for o in r.ops if o.kind not in ("stat", "fstat", "lstat",
                                                                       "spawn", "wait")]
    # the shell's `cat input.txt > sub/a`: the redirection's open in the shell, cat's copy in
    # its child through the inherited fd, one close when the shell restores its stdout
    assert ops[:7] == [
        ("mkdir", ("sub", 0o777), None),
        ("open", (1, "sub/a", "O_WRONLY|O_CREAT|O_TRUNC", 0o666), None),
        ("open", (2, "input.txt", "O_RDONLY", 0), None),
        ("copy", (2, None, 1, None, 16), None),
        ("copy", (2, None, 1, None, 0), None),
        ("close", (2,), None),
        ("close", (1,), None)]
    assert ops[7:10] == [("rename", ("sub/a", "sub/b"), None), ("symlink", ("b", "sub/l"), None),
                         ("unlink", ("sub/b",), None)]
    # the two Python threads: each its own replay thread, pwrite offsets kept, fsync each
    by_handle: dict[int, list] = {}
    for o in r.ops:
        if o.kind in ("write", "fsync") and o.args[0] in (3, 4):
            by_handle.setdefault(o.args[0], []).append((o.kind, o.args[1:]))
    for h in (3, 4):
        assert by_handle[h] == [("write", (0, 4096)), ("fsync", ()), ("write", (4096, 4096)),
                                ("fsync", ()), ("write", (8192, 4096)), ("fsync", ())]
    t3 = {o.thread for o in r.ops if o.args[:1] == (3,) and o.kind in ("write", "fsync")}
    t4 = {o.thread for o in r.ops if o.args[:1] == (4,) and o.kind in ("write", "fsync")}
    assert len(t3) == len(t4) == 1 and t3 != t4
    # the initial state: what the command used that was there before, nothing else
    assert [e.path for e in r.init] == [".", "input.txt"]
    # python's libraries, /etc/hostname, the shell's stdout: outside, counted
    assert r.outside > 100
    assert r.data_bytes() == (16, 16 + 6 * 4096)


def test_threads_follow_their_parents_spawn():
    r = sample_replay()
    spawned = {o.args[0]: o.t for o in r.ops if o.kind == "spawn"}
    first = {}
    for o in r.ops:
        first.setdefault(o.thread, o.t)
    assert all(first[t] >= spawned[t] for t in first if t != 1)


def test_the_format_round_trips():
    r = sample_replay()
    back = fmt.parse(r.text())
    assert back.ops == r.ops and back.init == r.init and back.outside == r.outside
    assert back.account == r.account and r.account.calls("elsewhere", "read") > 0
    assert back.meta == r.meta


def test_paths_with_spaces_and_failures_round_trip():
    r = fmt.Replay(ops=[fmt.Op(0.5, 1, "open", (1, "a b/c, d", "O_RDONLY", 0), "ENOENT"),
                        fmt.Op(0.55, 1, "unlink", ("!EPERM",)),
                        fmt.Op(0.6, 2, "symlink", ("../x y", "l n"))],
                   init=[InitEntry("file", "a b/c", 5), InitEntry("symlink", "s", target="t")])
    assert fmt.parse(r.text()).ops == r.ops
    assert fmt.parse(r.text()).init == r.init


def test_another_version_is_refused_in_one_line():
    text = sample_replay().text().replace("fslab-replay 2", "fslab-replay 7", 1)
    with pytest.raises(FslabError, match=r"version 7, this fslab reads versions 1 and 2: capture"):
        fmt.parse(text, "W.replay")
    with pytest.raises(FslabError, match="not an fslab replay file"):
        fmt.parse("hello\n", "W.replay")
    with pytest.raises(FslabError, match=r"W.replay:4: malformed line"):
        fmt.parse("fslab-replay 1\nops\n0.1 1 write 1 - 10\n0.2 1 write 1\n", "W.replay")


def _fslab(*args):
    return fslab_in_process(*args, check=False)


def test_capture_of_a_real_command(tmp_path):
    d = tmp_path / "work"
    d.mkdir()
    (d / "in").write_bytes(b"x" * 10000)
    out = tmp_path / "w.replay"
    p = _fslab("capture", "--out", str(out), "--dir", str(d), "--",
               "sh", "-c", "mkdir o && cp in o/copy && sync o/copy && rm in")
    assert p.returncode == 0, p.stderr
    assert "outside the directory, not replayed" in p.stdout
    r = fmt.load(out)
    kinds = r.counts()
    assert kinds["mkdir"] == 1 and kinds["unlink"] == 1 and kinds["fsync"] == 1
    assert [(e.kind, e.path, e.size) for e in r.init] == [("dir", ".", 0), ("file", "in", 10000)]
    assert r.data_bytes() == (10000, 10000)
    assert sorted(os.listdir(d)) == ["o"]     # the capture added nothing to the directory


def test_capture_bad_commands_say_one_line(tmp_path):
    out = tmp_path / "w.replay"
    p = _fslab("capture", "--out", str(out), "--dir", str(tmp_path), "--", "true")
    assert p.returncode == 1
    assert p.stderr.strip().count("\n") == 0
    assert "did no file I/O in" in p.stderr and "nothing to replay" in p.stderr
    p = _fslab("capture", "--out", str(out), "--", "sh", "-c", "echo oops >&2; exit 3")
    assert p.returncode == 1
    assert p.stderr.strip() == "fslab: the command failed (exit 3), nothing captured: " \
                               "sh -c 'echo oops >&2; exit 3': oops"
    assert not out.exists()


def test_a_version_1_file_is_still_read():
    r = fmt.parse('fslab-replay 1\nmeta calls 9\noutside 412\nmmap "a b" 2\nops\n'
                  '0.1 1 open 1 "x" O_RDONLY 0\n', "old.replay")
    assert r.outside == 412 and not r.account.split
    assert r.mmaps["a b"].count == 2 and r.mmaps["a b"].bytes == 0
    assert "outside the directory, not replayed: 412 calls" in r.account.lines(0, 0)


def _capture(tmp_path, script, d=None, **files):
    d = d or tmp_path / "work"
    d.mkdir(exist_ok=True)
    for name, size in files.items():
        (d / name).write_bytes(b"x" * size)
    out = tmp_path / "w.replay"
    p = _fslab("capture", "--out", str(out), "--dir", str(d), "--", "sh", "-c", script)
    assert p.returncode == 0, p.stderr
    return fmt.load(out), p.stdout


def test_a_copy_from_outside_the_directory_is_a_write_of_its_bytes(tmp_path):
    """cp -a (coreutils 9.1: copy_file_range) of a tree from elsewhere: for the filesystem
    under test, 20 files of 8 KiB written (it was 20 empty files, no word of it)."""
    src = tmp_path / "src"
    src.mkdir()
    for i in range(20):
        (src / f"f{i}").write_bytes(os.urandom(8192))
    r, out = _capture(tmp_path, f"cp -a {src} dst && cp dst/f0 again")
    writes = [o for o in r.ops if o.kind == "write"]
    assert len(writes) >= 20 and r.counts().get("copy", 0) >= 1   # inside -> inside: a copy
    assert r.data_bytes()[1] == 21 * 8192
    assert r.account.bytes("elsewhere", "read") >= 20 * 8192     # the source's side, said
    assert "LOST" not in out


def test_sync_and_syncfs_are_replayed_as_syncfs(tmp_path):
    """`sync` and `sync -f` after buffered writes: the replay flushes the filesystem as the
    command did (they were not traced: the replay was buffered writes only)."""
    r, _ = _capture(tmp_path, "echo hi > a && sync && echo ho > b && sync -f b")
    kinds = [o.kind for o in r.ops if o.kind in ("write", "syncfs")]
    assert kinds == ["write", "syncfs", "write", "syncfs"]
    from fslab.workloads.support.replayer import Replayer
    root = tmp_path / "replayed"
    root.mkdir()
    out = Replayer(r, root, 1).run()
    assert out.issued["syncfs"] == 2 and not out.differences


def test_what_the_capture_left_out_is_accounted_and_a_big_loss_said(tmp_path):
    """A program writing 4 MiB through a shared mapping and 200 KiB by write(2): the
    mapping is in the account with its size, and the loss (95% of its bytes) is said."""
    prog = ("import mmap, os\n"
            "fd = os.open('m', os.O_RDWR | os.O_CREAT, 0o644); os.ftruncate(fd, 4 << 20)\n"
            "m = mmap.mmap(fd, 4 << 20); m[:] = b'y' * (4 << 20); m.flush(); m.close()\n"
            "w = os.open('w', os.O_WRONLY | os.O_CREAT, 0o644); os.write(w, b'z' * 204800)\n"
            "os.fsync(w)\n")
    (tmp_path / "prog.py").write_text(prog)
    r, out = _capture(tmp_path, f"{sys.executable} {tmp_path / 'prog.py'}")
    assert r.mmaps["m"].bytes == 4 << 20 and r.mmaps["m"].writable
    assert "LOST: 95% of the command's bytes in the directory not replayed (mmap'd files)" in out
    assert "mmap'd, page I/O not replayed: m (4.0 MiB, shared writable)" in out
    # the interpreter's libraries: reads elsewhere, with their bytes
    assert r.account.calls("elsewhere", "read") > 0 and r.account.bytes("elsewhere", "read") > 0


def test_the_account_round_trips_and_is_json():
    import orjson
    r = fmt.Replay(ops=[fmt.Op(0.0, 1, "stat", ("a",))])
    r.account.add("elsewhere", "read", 100)
    r.mmaps["m x"] = fmt.Mapped(2, 4096, True)
    back = fmt.parse(r.text())
    assert back.account == r.account
    assert orjson.loads(orjson.dumps(back.account.to_dict()))["mmaps"] == {"m x": [2, 4096, True]}
