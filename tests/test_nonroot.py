"""Without root: a one-line error, unless --mountpoint is given (which then works).

Really dropping privileges needs an interpreter that user `nobody` can execute
(here Python lives under /root); when it cannot, the same CLI path runs in-process
with only the root check answering "not root".
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from conftest import REPO, fslab_in_process


def _nobody_can_run_python(tmp_path) -> bool:
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return False
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        sys.executable, "-c", "import fslab.cli"], capture_output=True,
                       env={"PYTHONPATH": str(REPO)}, cwd="/")
    return p.returncode == 0


@pytest.fixture
def tmp_path():
    """A directory user `nobody` can reach (pytest's own tmp dirs sit under a 0700 parent)."""
    import shutil
    import tempfile
    from pathlib import Path
    d = Path(tempfile.mkdtemp(prefix="fslab-nonroot-", dir="/tmp"))
    os.chmod(d, 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def as_user(tmp_path, monkeypatch):
    """A function running `fslab ARGS` as an unprivileged user: (exit code, stdout, stderr)."""
    real = _nobody_can_run_python(tmp_path)
    monkeypatch.setenv("FSLAB_STATE_DIR", str(tmp_path / "state"))

    def run(args):
        if real:
            env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "COLUMNS": "160",
                   "FSLAB_STATE_DIR": str(tmp_path / "state"), "PYTHONPATH": str(REPO)}
            p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                sys.executable, "-m", "fslab", *args], capture_output=True,
                               text=True, env=env, cwd=tmp_path, timeout=300)
            return p.returncode, p.stdout, p.stderr
        import fslab.run.local as local
        monkeypatch.setattr(local, "is_root", lambda: False)
        p = fslab_in_process(*args, check=False)
        return p.returncode, p.stdout, p.stderr
    return run


def test_without_root_run_says_what_is_needed(as_user, tmp_path):
    code, _, err = as_user(["run", "--fs", "ext4", "--profile", "smoke", "--results", str(tmp_path / "r")])
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "root" in lines[0] and "--mountpoint" in lines[0]


@pytest.mark.fio
def test_mountpoint_works_without_root(as_user, tmp_path):
    d = tmp_path / "existing"
    d.mkdir()
    os.chmod(d, 0o777)
    code, out, err = as_user(["run", "--mountpoint", str(d), "--suite", "fio", "--profile", "smoke",
                              "--iterations", "1", "--results", str(tmp_path / "r")])
    assert code == 0, out + err
    db = sqlite3.connect(tmp_path / "r" / "fslab.sqlite")
    fs, variant = db.execute("SELECT DISTINCT fs, variant FROM records").fetchone()
    from fslab.targets.mountpoint import mount_of
    assert fs == mount_of(str(d))["fstype"] and variant == "existing"
    assert db.execute("SELECT COUNT(*) FROM records WHERE metric='read_iops' AND value>0").fetchone()[0] >= 3
    assert list(d.iterdir()) == []   # fslab removed its test directory
