"""Run a bench/ script under the project's Python environment, whichever python started it.

`bench/overhead` starts with `#!/usr/bin/env python3`: the system python, which has
none of fslab's dependencies. scripts/setup makes <repo>/.venv; FSLAB_PYTHON names
another interpreter (e.g. a shared venv). The script re-executes itself with it once.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def use_project_python(script: str) -> None:
    py = os.environ.get("FSLAB_PYTHON") or str(REPO / ".venv" / "bin" / "python")
    if os.environ.get("FSLAB_BENCH_REEXEC") or not os.path.exists(py):
        sys.path.insert(0, str(REPO))   # this checkout's fslab, not an installed one
        return
    if Path(sys.executable).absolute() != Path(py).absolute():
        os.environ["FSLAB_BENCH_REEXEC"] = "1"
        os.execv(py, [py, script, *sys.argv[1:]])
    sys.path.insert(0, str(REPO))
