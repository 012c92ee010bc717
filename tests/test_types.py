"""The type check: mypy over the packages pyproject.toml's [tool.mypy] names, at its
strictness (every function annotated, untyped bodies checked too). Part of the fast tier,
so ./run-tests runs it; its cache (.mypy_cache, ignored by git) keeps a rerun under a second."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# one worker runs both, the whole check first: the planted error's check then reads the
# library types from its cache (0.2 s) instead of reading them all again (0.7 s)
pytestmark = pytest.mark.xdist_group("mypy")


def test_checked_packages_pass_mypy():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert {"fslab/metrics", "fslab/plan", "fslab/store", "fslab/analysis", "fslab/decide",
            "fslab/report"} <= set(config["files"])
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout


def test_a_type_error_fails_the_check(tmp_path):
    """The check is not vacuous: a planted error in a checked package's style is found."""
    bad = tmp_path / "fslab_planted_type_error.py"
    bad.write_text("def half(x: int) -> int:\n    return x / 2\n\n\ndef untyped(x):\n    return x\n")
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                           "--cache-dir", str(ROOT / ".mypy_cache"), str(bad)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout
    assert "Incompatible return value type" in done.stdout
    assert "Function is missing a type annotation" in done.stdout


def test_a_module_marked_xdist_group_runs_on_one_worker(request):
    """./run-tests's fast tier (--dist loadgroup) keeps a module marked xdist_group on one
    worker: its module-wide fixture made once (test_report's rendered report, 2 s), the
    planted type error checked after the whole check, with its cache. pytest-xdist marks
    the group in the node id, which pytest 9.2 no longer lets it set: the grouping was
    silently lost (pyproject.toml pins the pytest it works with)."""
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not run on xdist workers with --dist loadgroup")
    assert request.node.nodeid.endswith("@mypy"), request.node.nodeid
