"""Issue 4's acceptance: each shipped study plan completes at --profile smoke on ext4, xfs,
btrfs and zfs; every filesystem has records from every suite; the report renders."""
from __future__ import annotations

import sqlite3

import pytest

from conftest import REPO, leftovers, needs_root, run_fslab

pytestmark = [pytest.mark.e2e, pytest.mark.slow, needs_root()]

FOUR = "ext4,xfs,btrfs,zfs"
PLANS = {
    # S0 compares with the raw device measured in the same run
    "s0-onboard.toml": FOUR + ",raw",
    "s1-dedup.toml": FOUR,
    "s2-fio-stats.toml": FOUR,
    "s3-fileserver.toml": FOUR,
}


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_plan_at_smoke_on_four_filesystems(plan, state_dir, results, tmp_path):
    work = tmp_path / "work"
    run_fslab("run", str(REPO / "plans" / plan), "--fs", PLANS[plan], "--profile", "smoke",
              "--iterations", "1", "--results", str(results), "--workdir", str(work), timeout=1800)
    assert not leftovers(str(work))
    db = sqlite3.connect(results / "fslab.sqlite")
    failed = db.execute("SELECT fs, variant, suite, \"case\", message FROM units "
                        "WHERE status != 'done'").fetchall()
    assert not failed, failed
    suites = {s for (s,) in db.execute("SELECT DISTINCT suite FROM units")}
    have = {(fs, suite) for fs, suite in db.execute(
        "SELECT DISTINCT fs, suite FROM records WHERE value IS NOT NULL")}
    for fs in PLANS[plan].split(","):
        for suite in suites:
            if fs == "raw" and suite != "fio":
                continue
            assert (fs, suite) in have, (fs, suite)
    # directional metrics exist for every filesystem (what the verdicts are made of)
    ranked = {fs for (fs,) in db.execute("SELECT DISTINCT fs FROM records WHERE better IS NOT NULL")}
    assert set(PLANS[plan].split(",")) <= ranked
    html = tmp_path / "report.html"
    run_fslab("report", "--results", str(results), "--html", str(html), timeout=600)
    text = html.read_text()
    assert "<svg" in text and "smoke" in text
