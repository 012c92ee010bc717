"""The issues' "done when" commands, run as a user would type them (slow: minutes each)."""
from __future__ import annotations

import sqlite3

import pytest

from conftest import leftovers, needs_root, run_fslab

pytestmark = [pytest.mark.e2e, pytest.mark.slow, needs_root()]

FOUR = ("ext4", "xfs", "btrfs", "zfs")


def test_reliability_suites_on_four_filesystems(state_dir, results, tmp_path):
    """Issue 5: integrity, enospc and aging at smoke on ext4, xfs, btrfs and zfs; the report
    shows the integrity matrix, the full-disk table and the aging curves."""
    work = tmp_path / "work"
    run_fslab("run", "--fs", ",".join(FOUR), "--suite", "integrity,enospc,aging", "--profile", "smoke",
              "--iterations", "1", "--results", str(results), "--workdir", str(work), timeout=2400)
    assert not leftovers(str(work))
    db = sqlite3.connect(results / "fslab.sqlite")
    failed = db.execute("SELECT fs, suite, \"case\", message FROM units WHERE status != 'done'").fetchall()
    assert not failed, failed
    have = set(db.execute("SELECT DISTINCT fs, suite FROM records"))
    assert {(fs, s) for fs in FOUR for s in ("integrity", "enospc", "aging")} <= have
    html = tmp_path / "report.html"
    run_fslab("report", "--results", str(results), "--html", str(html), timeout=600)
    text = html.read_text().lower()
    assert "integrity" in text and "full-disk" in text.replace("full disk", "full-disk") and "aging" in text


@pytest.mark.guest
def test_guest_filesystems_side_by_side(state_dir, results, tmp_path):
    """Issue 6: f2fs, jfs, reiserfs, nilfs2 and an ext4 baseline in one guest, fio and tasks."""
    from fslab.guest import capable
    why = capable()
    if why:
        pytest.skip(f"guest target unavailable: {why}")
    fs = ("f2fs", "jfs", "reiserfs", "nilfs2", "ext4")
    run_fslab("run", "--fs", ",".join(fs), "--target", "guest", "--suite", "fio,tasks",
              "--profile", "smoke", "--iterations", "1", "--results", str(results), timeout=3000)
    db = sqlite3.connect(results / "fslab.sqlite")
    failed = db.execute("SELECT fs, suite, \"case\", message FROM units WHERE status != 'done'").fetchall()
    assert not failed, failed
    rows = set(db.execute("SELECT DISTINCT host, fs, suite FROM records"))
    hosts = {h for h, _, _ in rows}
    assert len(hosts) == 1 and hosts.pop().startswith("guest-")
    assert {(f, s) for f in fs for s in ("fio", "tasks")} <= {(f, s) for _, f, s in rows}
    md = tmp_path / "report.md"
    run_fslab("report", "--results", str(results), "--markdown", str(md), timeout=600)
    text = md.read_text()
    assert all(f in text for f in fs) and "emulated" in text.lower()
