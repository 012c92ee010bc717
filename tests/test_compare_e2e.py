"""A planted regression, for real: two smoke runs of fio randread on ext4 (5 rounds each,
in two results stores), the second capped by fio's rate_iops; `fslab compare` prints the
change with its interval and p, and `--fail-if-slower 5%` fails the capped run only."""
from __future__ import annotations

import json

import pytest

from conftest import leftovers, needs_root, run_fslab

pytestmark = [pytest.mark.fio, needs_root()]

PLAN = '[run]\nprofile = "smoke"\n[[filesystem]]\nname = "ext4"\n[[suite]]\nkind = "fio"\nworkloads = ["randread"]\n'


def test_fail_if_slower_catches_a_planted_regression(state_dir, tmp_path):
    (tmp_path / "plan.toml").write_text(PLAN)
    work = tmp_path / "work"
    before, after = tmp_path / "before", tmp_path / "after"
    # 4 jobs x 10 IOPS: a twentieth of the slowest uncapped round seen on this machine with
    # a load average of 8 on 2 CPUs (979 IOPS; 250 per job was within reach of such a round)
    for results, extra in ((before, []), (after, ["--fio", "rate_iops=10"])):
        p = run_fslab("run", str(tmp_path / "plan.toml"), "-n", "5", *extra,
                      "--results", str(results), "--workdir", str(work), timeout=600)
        assert p.returncode == 0, p.stdout + p.stderr
    slower = run_fslab("compare", f"@{before}", f"@{after}", "--fail-if-slower", "5%",
                       "--html", str(tmp_path / "compare.html"), check=False,
                       env={"COLUMNS": "250"})
    assert slower.returncode == 1, slower.stdout + slower.stderr
    out = slower.stdout
    row = next(ln for ln in out.splitlines() if "read IOPS" in ln)
    assert "p=0.008" in row and "% [" in row and "× slower" in row, out
    assert "suite fio: fio.rate_iops – → 10" in " ".join(out.split())
    assert "--fail-if-slower 5%: FAILED" in out and "ext4 fio:randread read IOPS -" in out
    assert "× slower" in (tmp_path / "compare.html").read_text()
    faster = run_fslab("compare", f"@{after}", f"@{before}", "--fail-if-slower", "5%",
                       "--json", check=False)
    assert faster.returncode == 0, faster.stdout + faster.stderr
    rows = {r["metric"]: r for r in json.loads(faster.stdout)["rows"]}
    assert rows["read_iops"]["significant"] and rows["read_iops"]["change_pct"] > 100
    assert rows["read_iops"]["gate"] == "ok" and "passed" in faster.stderr
    assert not leftovers(str(work))
