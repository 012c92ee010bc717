"""The unit deadline (fslab/system/deadline.py) on plain processes: fast, no root."""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from fslab.system import deadline


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def _wait_for_child_of(pid: int) -> int:
    for _ in range(100):
        kids = [p.pid for p in deadline.process_family(pid) if p.pid != pid]
        if kids:
            return kids[0]
        time.sleep(0.05)
    raise AssertionError("the child never started")


def test_past_its_deadline_a_process_dies_with_the_children_that_left_its_group():
    # like fio's job processes: a child in a session of its own (setsid), which the
    # process group of its parent does not include
    p = subprocess.Popen(["sh", "-c", "setsid sleep 300 & sleep 300"], start_new_session=True)
    child = _wait_for_child_of(p.pid)
    t = time.monotonic()
    with pytest.raises(deadline.Hung) as e:
        deadline.wait(p.pid, 0.2)
    assert time.monotonic() - t < 15
    assert str(e.value).startswith("hung: no result after 0.2 s (")
    assert "sleep in " in str(e.value) or "sh in " in str(e.value)
    for _ in range(50):
        if not _alive(child):
            break
        time.sleep(0.1)
    assert not _alive(child), "a child in its own session outlived the deadline"
    assert not _alive(p.pid)


def test_a_process_that_finishes_in_time_returns_its_status():
    p = subprocess.Popen(["sh", "-c", "exit 3"], start_new_session=True)
    status, ru = deadline.wait(p.pid, 30)
    assert os.waitstatus_to_exitcode(status) == 3 and ru.ru_utime >= 0


def test_the_family_holds_descendants_in_other_sessions_and_the_group():
    p = subprocess.Popen(["sh", "-c", "setsid sleep 300 & sleep 300"], start_new_session=True)
    try:
        child = _wait_for_child_of(p.pid)
        # on a busy machine the children may still be forking or exec'ing: give them until
        # they sleep (bounded), then look
        for _ in range(100):
            family = {q.pid: q for q in deadline.process_family(p.pid)}
            text = deadline.describe(list(family.values()))
            if "sleep in" in text and "(state S)" in text and child in family:
                break
            time.sleep(0.1)
        assert p.pid in family and child in family
        assert any(q.pgrp != p.pid for q in family.values())   # one escaped the group
        assert "(state S)" in text, text
    finally:
        for q in deadline.process_family(p.pid):
            os.kill(q.pid, 9)
        p.wait()


def test_the_deadline_grows_with_what_the_unit_asked_for():
    assert deadline.deadline_for(1, 0, 0) == deadline.FLOOR_S
    assert deadline.deadline_for(600, 60, 0) == 4 * 660
    assert deadline.deadline_for(0, 0, 10 * 2**30) == 1024   # 10 GiB at 10 MiB/s
    assert deadline.deadline_for(600, 0, 0, override=25) == 25
