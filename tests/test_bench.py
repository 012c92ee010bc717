"""bench/ scripts start as documented (`bench/NAME`) under the project's Python, whatever
python3 is first on PATH."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import REPO


@pytest.mark.parametrize("script", ["overhead", "ingest", "stats", "decide"])
def test_bench_script_runs_under_the_project_python(script):
    # the shebang's python3 may lack fslab's dependencies: the script re-executes itself
    # with FSLAB_PYTHON (or <repo>/.venv/bin/python, which scripts/setup creates)
    env = {k: v for k, v in os.environ.items() if k != "FSLAB_BENCH_REEXEC"}
    env["FSLAB_PYTHON"] = sys.executable
    p = subprocess.run([str(REPO / "bench" / script), "--help"], capture_output=True, text=True,
                       timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"usage: {script}")
