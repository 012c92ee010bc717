"""zfs-fuse's daemon: started when needed, replaced when it hangs, stopped only if fslab started it."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from conftest import needs_root
from fslab.proc import which

pytestmark = [needs_root(), pytest.mark.skipif(not which("zfs-fuse"), reason="zfs-fuse not installed")]


def test_a_hung_daemon_that_fslab_started_is_replaced(state_dir):
    from fslab.filesystems import zfs
    if zfs.kernel_zfs():
        pytest.skip("kernel OpenZFS in use: no fuse daemon")
    if zfs.fuse_daemon_pid():
        pytest.skip("a zfs-fuse daemon not started by this test is running")
    assert zfs.ensure_fuse_daemon() is True
    first = zfs.fuse_daemon_pid()
    try:
        os.kill(first, signal.SIGSTOP)   # a deadlocked daemon: alive, answers nothing
        t = time.monotonic()
        assert zfs.ensure_fuse_daemon() is True
        assert time.monotonic() - t < 60
        second = zfs.fuse_daemon_pid()
        assert second and second != first and zfs.responsive()
        assert not Path(f"/proc/{first}").exists() or \
            Path(f"/proc/{first}/stat").read_text().split()[2] == "Z"
    finally:
        for pid in {first, zfs.fuse_daemon_pid()}:
            if pid:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
        zfs.stop_fuse_daemon_if_ours()
    assert zfs.fuse_daemon_pid() is None
