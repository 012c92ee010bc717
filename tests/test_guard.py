"""The block-device guard: a device holding data is refused and never touched."""
from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from conftest import leftovers, needs_root, run_fslab

pytestmark = [pytest.mark.e2e, needs_root()]


@pytest.fixture
def loopdev(tmp_path):
    img = tmp_path / "victim.img"
    img.write_bytes(b"")
    os.truncate(img, 320 << 20)
    dev = subprocess.run(["losetup", "--find", "--show", str(img)], capture_output=True,
                         text=True, check=True).stdout.strip()
    yield dev
    subprocess.run(["umount", str(tmp_path / "m")], capture_output=True)
    subprocess.run(["losetup", "-d", dev], capture_output=True)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_device_with_ext4_and_a_file_is_refused(state_dir, results, loopdev, tmp_path):
    subprocess.run(["mkfs.ext4", "-q", "-F", loopdev], check=True)
    mnt = tmp_path / "m"
    mnt.mkdir()
    subprocess.run(["mount", loopdev, str(mnt)], check=True)
    (mnt / "precious.txt").write_bytes(os.urandom(1 << 20))
    subprocess.run(["umount", str(mnt)], check=True)
    dev_sum = hashlib.sha256(open(loopdev, "rb").read()).hexdigest()

    p = run_fslab("run", "--device", loopdev, "--fs", "ext4", "--profile", "smoke",
                  "--results", str(results), check=False)
    assert p.returncode == 2
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and "refusing" in err[0] and "ext4" in err[0] and "--destroy-data" in err[0]
    # the device and the file on it are untouched
    assert hashlib.sha256(open(loopdev, "rb").read()).hexdigest() == dev_sum
    subprocess.run(["mount", "-o", "ro", loopdev, str(mnt)], check=True)
    try:
        assert (mnt / "precious.txt").stat().st_size == 1 << 20
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_mounted_device_is_refused_even_when_confirmed(state_dir, results, loopdev, tmp_path):
    subprocess.run(["mkfs.ext4", "-q", "-F", loopdev], check=True)
    mnt = tmp_path / "m"
    mnt.mkdir()
    subprocess.run(["mount", loopdev, str(mnt)], check=True)
    try:
        p = run_fslab("run", "--device", loopdev, f"--destroy-data={loopdev}", "--fs", "ext4",
                      "--profile", "smoke", "--results", str(results), check=False)
        assert p.returncode == 2 and "mounted" in p.stderr
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_root_device_is_refused():
    from fslab.errors import RefusedError
    from fslab.targets.blockdev import check_destroyable
    src = subprocess.run(["findmnt", "-n", "-o", "SOURCE", "/"], capture_output=True,
                         text=True).stdout.strip()
    if not src.startswith("/dev/") or not os.path.exists(src):
        pytest.skip(f"/ is not on a block device here ({src})")
    with pytest.raises(RefusedError, match="backs /|mounted"):
        check_destroyable(src, destroy_data=src)


def test_blank_device_needs_confirmation_then_runs(state_dir, results, loopdev, tmp_path):
    p = run_fslab("run", "--device", loopdev, "--fs", "ext4", "--profile", "smoke",
                  "--results", str(results), check=False)
    assert p.returncode == 2 and f"--destroy-data={loopdev}" in p.stderr
    run_fslab("run", "--device", loopdev, f"--destroy-data={loopdev}", "--fs", "ext4",
              "--suite", "fio", "--profile", "smoke", "--iterations", "1",
              "--results", str(results), "--workdir", str(tmp_path / "work"))
    import sqlite3
    n = sqlite3.connect(results / "fslab.sqlite").execute(
        "SELECT COUNT(*) FROM records WHERE metric IN ('read_iops','write_iops') AND value > 0").fetchone()[0]
    assert n >= 5
    assert not leftovers(str(tmp_path / "work"))
    assert not [x for x in leftovers(loopdev) if "mount" in x]
