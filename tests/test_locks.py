"""fslab/system/locks.py: a host-wide lock is waited for, but never forever."""
from __future__ import annotations

import fcntl
import threading
import time

import pytest

from fslab.errors import StepFailed
from fslab.system.locks import exclusive


def test_a_lock_held_past_the_deadline_fails_the_step_and_names_it(tmp_path):
    path = tmp_path / "x.lock"
    with open(path, "a+") as other:          # another holder (its own open file)
        fcntl.flock(other, fcntl.LOCK_EX)
        t0 = time.monotonic()
        with pytest.raises(StepFailed, match=r"zfs-fuse daemon: another fslab process held .* 0.3 s"):
            with exclusive(path, 0.3, "zfs-fuse daemon"):
                pass
        assert 0.3 <= time.monotonic() - t0 < 2


def test_a_lock_released_in_time_is_taken(tmp_path):
    path = tmp_path / "x.lock"
    other = open(path, "a+")
    fcntl.flock(other, fcntl.LOCK_EX)
    threading.Timer(0.2, other.close).start()      # closing releases it
    got = []
    with exclusive(path, 5, "test"):
        got.append(True)
    assert got == [True]


def test_the_resource_list_is_not_waited_for_forever(tmp_path, monkeypatch):
    """fslab/system/state.py: a process hanging while it holds the resource list's lock
    fails the next note with its name, and the list is untouched."""
    from fslab.system import state
    monkeypatch.setenv("FSLAB_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(state, "LOCK_S", 0.3)
    state.note("file", "/tmp/a")
    with open(tmp_path / "resources.lock", "a+") as other:
        fcntl.flock(other, fcntl.LOCK_EX)
        with pytest.raises(StepFailed, match="fslab's resource list"):
            state.note("file", "/tmp/b")
    assert [e["id"] for e in state.entries()] == ["/tmp/a"]
