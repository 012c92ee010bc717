"""Nothing waits forever: a host-wide lock (fslab/system/locks.py), the resource list, a
forked child, a remote agent: each is waited for, but not past its deadline."""
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
        with pytest.raises(StepFailed, match=r"zfs-fuse daemon: another fslab process held .* 0.15 s"):
            with exclusive(path, 0.15, "zfs-fuse daemon"):
                pass
        assert 0.15 <= time.monotonic() - t0 < 2


def test_a_lock_released_in_time_is_taken(tmp_path):
    path = tmp_path / "x.lock"
    other = open(path, "a+")
    fcntl.flock(other, fcntl.LOCK_EX)
    threading.Timer(0.1, other.close).start()      # closing releases it
    got = []
    with exclusive(path, 5, "test"):
        got.append(True)
    assert got == [True]


def test_the_resource_list_is_not_waited_for_forever(tmp_path, monkeypatch):
    """fslab/system/state.py: a process hanging while it holds the resource list's lock
    fails the next note with its name, and the list is untouched."""
    from fslab.system import state
    monkeypatch.setenv("FSLAB_STATE_DIR", str(tmp_path))
    monkeypatch.setattr(state, "LOCK_S", 0.15)
    state.note("file", "/tmp/a")
    with open(tmp_path / "resources.lock", "a+") as other:
        fcntl.flock(other, fcntl.LOCK_EX)
        with pytest.raises(StepFailed, match="fslab's resource list"):
            state.note("file", "/tmp/b")
    assert [e["id"] for e in state.entries()] == ["/tmp/a"]


def test_a_forked_child_that_never_answers_is_given_up_on(monkeypatch):
    """fslab/system/forked.py: collecting waits COLLECT_S for the child, then kills it and
    does the work itself (the same function, the same result)."""
    import os
    from fslab.system import forked
    monkeypatch.setattr(forked, "COLLECT_S", 0.2)
    parent = os.getpid()

    def work(x):
        if os.getpid() != parent:      # the child hangs
            time.sleep(3600)
        return x * 2

    t0 = time.monotonic()
    assert forked.start(work, 21)() == 42
    assert time.monotonic() - t0 < 10


def test_a_remote_agent_that_never_answers_is_given_up_on(monkeypatch, tmp_path):
    """fslab/remote/ssh.py: a call waits CALL_S for the agent's reply, then closes the
    connection (the agent's process group goes) and fails the step, naming the operation.
    The "agent" here is a shell that reads nothing and never answers."""
    from fslab.remote import ssh
    monkeypatch.setattr(ssh, "CALL_S", 0.2)
    host = ssh.AgentHost(["sh", "-c", "sleep 3600", "--"], "python3", str(tmp_path))
    t0 = time.monotonic()
    with pytest.raises(ssh.HostLost, match="did not answer 'environment' within 0.2 s"):
        host.environment(["ext4"])
    assert time.monotonic() - t0 < 15
    assert host.proc.poll() is not None       # the hung agent is gone, not left behind
    host.close()
