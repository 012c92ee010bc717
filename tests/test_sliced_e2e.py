"""Interleaved slices for real: a round's candidates of a fio case in one fio process,
each on its own fresh filesystem (fslab/workloads/sliced.py), and a planted slowdown of
5% told apart by a quick run of the design."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import needs_root, run_fslab
from fslab.system.mounts import mounted_under

pytestmark = [pytest.mark.e2e, pytest.mark.fio, needs_root()]


def _plan(tmp_path: Path, profile: str, filesystems: str, workloads: list[str],
          extra: str = "") -> Path:
    plan = tmp_path / "plan.toml"
    plan.write_text(f'[run]\nprofile = "{profile}"\n{extra}\n{filesystems}\n'
                    f'[[suite]]\nkind = "fio"\nworkloads = {json.dumps(workloads)}\n')
    return plan


def test_a_rounds_candidates_run_as_one_block_and_each_keeps_its_own_share(
        tmp_path, results, state_dir):
    fss = '[[filesystem]]\nname = "ext4"\n[[filesystem]]\nname = "xfs"\n'
    plan = _plan(tmp_path, "smoke", fss, ["randwrite-qd32"])
    here = tmp_path / "cwd"
    here.mkdir()
    out = run_fslab("run", str(plan), "--results", str(results), timeout=600, cwd=here)
    # fio writes each exec_prerun/postrun's output where it runs: the block's directory,
    # never the user's working directory (it left c0s0.prerun.txt ... there)
    assert list(here.iterdir()) == []
    said = " ".join(out.stdout.split())   # the header wraps at the terminal's width
    assert "each round's fio case in one fio process, its filesystems taking turns in " \
        "interleaved slices of 250 ms, 4 per candidate" in said
    shares = sorted(results.glob("runs/*/*-default/fio-randwrite-qd32-*/iter-*/block.json"))
    assert len(shares) == 4                                  # 2 filesystems x 2 rounds
    for share in shares:
        said = json.loads(share.read_text())
        block = results / said["block"]
        assert (block / "block.fio").exists() and sorted(said["members"]) == ["ext4", "xfs"]
        doc = json.loads((block / "fio.json").read_text())
        mine = [j for j in doc["jobs"] if j["jobname"].startswith(said["member"] + "s")]
        assert len(mine) == said["slices"] == 4
        own = json.loads((share.parent / "fio.json").read_text())["jobs"][0]["write"]
        # its rate is its slices' I/O over their time together
        ios = sum(j["write"]["total_ios"] for j in mine)
        ms = sum(j["write"]["runtime"] for j in mine)
        assert own["total_ios"] == ios and own["iops"] == pytest.approx(ios / ms * 1000)
        phases = json.loads((share.parent / "phases.json").read_text())
        assert 0.9 < phases["io"] < 5 and phases["block_io"] > phases["io"]
    r = results / "r.json"
    run_fslab("report", "--results", str(results), "--json", str(r))
    records = json.loads(r.read_text())["records"]
    for fs in ("ext4", "xfs"):
        iops = [x["value"] for x in records if x["fs"] == fs and x["metric"] == "write_iops"]
        dev = [x["value"] for x in records if x["fs"] == fs and x["metric"] == "device_write_bytes"]
        cpu = [x["value"] for x in records if x["fs"] == fs and x["metric"] == "ops_per_cpu_second"]
        assert len(iops) == 2 and min(iops) > 0
        # its own loop device wrote at least what fio wrote in its slices
        written = [x["value"] for x in records if x["fs"] == fs and x["metric"] == "write_io_bytes"]
        assert all(d >= 0.9 * w > 0 for d, w in zip(sorted(dev), sorted(written)))
        assert len(cpu) == 2 and min(cpu) > 0
    assert mounted_under(str(tmp_path)) == [] and not list(Path("/tmp").glob("fslab-*/mnt-*"))


@pytest.mark.serial   # a timing comparison: alone on the machine
def test_a_planted_five_percent_slowdown_is_separated_by_a_quick_race_of_slices(
        tmp_path, results, state_dir):
    """Two identical ext4 but one's fio jobs idle 5% of the time (a planted slowdown,
    fslab/fio/throttle.py): fslab decide at quick, whose rounds run as blocks of slices,
    ranks the clone below its original and stops racing it (eliminated or retired)."""
    plan = _plan(tmp_path, "quick", "", ["randread"])
    cands = tmp_path / "c.toml"
    cands.write_text('[[candidate]]\nname = "ext4"\nvariant = "orig"\n\n'
                     '[[candidate]]\nname = "ext4"\nvariant = "slow"\nthrottle = "5%"\n')
    out = run_fslab("decide", str(plan), "--candidates", str(cands), "--profile", "quick",
                    "--results", str(results), "--json", timeout=900)
    decision = json.loads(out.stdout)
    by = {c["label"]: c for c in decision["candidates"]}
    assert decision["leader"] == "ext4:orig", out.stdout[-2000:]
    slow = by["ext4:slow"]
    assert slow["eliminated_round"] is not None or slow["retired_round"] is not None, slow
    assert by["ext4:orig"]["eliminated_round"] is None
    assert list(results.glob("runs/*/blocks/fio-randread-*/iter-*/block.fio"))
