"""The options probe (fslab/run/probe.py): mkfs and mount options a kernel or tool refuses stop
`fslab run` before a run row exists, in one line with the cause (the kernel's own line for a
mount); accepted options are read back."""
from __future__ import annotations

import subprocess

import pytest

from conftest import needs_root, run_fslab
from fslab import filesystems
from fslab.plan import FilesystemSpec

# every test here reads the kernel log and checks that no probe image of any run is left
pytestmark = pytest.mark.serial


def no_run_row(results) -> bool:
    return not (results / "fslab.sqlite").exists() or \
        "20" not in run_fslab("list", "--results", str(results), timeout=60).stdout


def leftovers() -> str:
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True, timeout=30).stdout
    mounts = subprocess.run(["mount"], capture_output=True, text=True, timeout=30).stdout
    return "\n".join(line for line in (loops + mounts).splitlines() if "fslab-probe-" in line)


@needs_root()
@pytest.mark.parametrize("flag, value, line", [
    ("--mkfs-options", "-O nosuchfeature",
     "fslab: ext4: mkfs.ext4 -O nosuchfeature refused: Invalid filesystem option set: nosuchfeature"),
    ("--mount-options", "nosuchopt",
     "fslab: ext4: mount -o nosuchopt refused: ext4: Unknown parameter 'nosuchopt' (kernel log)"),
])
def test_refused_options_stop_the_run_before_its_row(tmp_path, state_dir, results, flag, value, line):
    p = run_fslab("run", "--fs", "ext4", "--profile", "smoke", "-n", "1", flag, value,
                  "--results", str(results), "--workdir", str(tmp_path / "w"),
                  check=False, timeout=300)
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.strip() == line and p.stdout == "", p.stdout + p.stderr
    assert no_run_row(results) and not leftovers()


@needs_root()
def test_the_probe_uses_the_image_the_run_would_use(tmp_path, state_dir, results):
    """xfs -d agcount=8 fits a 1 GiB image, not the 300 MiB smoke image every unit of this
    run makes: the probe refuses it on that size, before a run row (it was accepted on a
    larger scratch image, and every unit then failed)."""
    p = run_fslab("run", "--fs", "xfs", "--profile", "smoke", "-n", "1", "--mkfs-options",
                  "-d agcount=8", "--results", str(results), "--workdir", str(tmp_path / "w"),
                  check=False, timeout=300)
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.startswith("fslab: xfs: mkfs.xfs -d agcount=8 refused: ") and \
        "Log size must be at least 64MB" in p.stderr, p.stderr
    assert no_run_row(results) and not leftovers()


@needs_root()
def test_a_refused_variant_is_named_among_accepted_ones(tmp_path, state_dir, results):
    p = run_fslab("run", "--fs", "ext4,ext4:wb[-o data=writeback],xfs:bad[-o nobarrier]",
                  "--profile", "smoke", "-n", "1", "--results", str(results),
                  "--workdir", str(tmp_path / "w"), check=False, timeout=300)
    assert p.returncode == 2
    assert p.stderr.strip() == ("fslab: xfs:bad: mount -o nobarrier refused: xfs: Unknown "
                                "parameter 'nobarrier' (kernel log)"), p.stderr
    assert no_run_row(results) and not leftovers()


@needs_root()
def test_probe_reads_options_back_and_notes_what_differs(state_dir):
    from fslab.run.probe import probe
    ok = probe(filesystems.get("ext4"), FilesystemSpec(
        name="ext4", variant="wb", mount_options=["data=writeback", "commit=30", "barrier=0",
                                                  "noatime"]))
    assert ok.ok and ok.notes == [], ok   # barrier=0 is listed as nobarrier: the same thing
    assert {"commit=30", "data=writeback", "nobarrier"} <= set(ok.options_in_effect["super_options"].split(","))
    assert "noatime" in ok.options_in_effect["mount_options"]
    # btrfs lists no nodiscard (its default here): said as such, not refused
    quiet = probe(filesystems.get("btrfs"), FilesystemSpec(name="btrfs", variant="n",
                                                           mount_options=["nodiscard"]))
    assert quiet.ok and quiet.notes == ["-o nodiscard: not listed in /proc/self/mountinfo "
                                        "(a default the kernel does not list, or ignored)"]
    # a time limit passed: the step in flight is stopped, the probe refuses, nothing is left
    late = probe(filesystems.get("ext4"), FilesystemSpec(name="ext4", variant="t",
                                                         mount_options=["noatime"]), time_limit=0.005)
    assert not late.ok and "passed the probe's time limit (0.005 s)" in late.why
    assert not leftovers()


@needs_root()
def test_accepted_options_reach_the_report_side_by_side(tmp_path, state_dir, results):
    p = run_fslab("run", "--fs", "ext4,ext4:wb[-o data=writeback,commit=30]", "--suite",
                  "features", "--profile", "smoke", "-n", "1", "--results", str(results),
                  "--workdir", str(tmp_path / "w"), timeout=600)
    assert p.stdout.startswith("options probed on scratch images: ext4:wb accepted")
    report = run_fslab("report", "--results", str(results), timeout=120).stdout
    table = report[report.index("Options per filesystem"):]
    row = next(line for line in table.splitlines() if "in effect" in line)
    assert "commit=30" in row and "data=writeback" in row
    md = tmp_path / "r.md"
    run_fslab("report", "--results", str(results), "--markdown", str(md), timeout=120)
    assert "| mount options | defaults | data=writeback,commit=30 |" in md.read_text()
