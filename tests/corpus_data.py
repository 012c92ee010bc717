"""Test data built from the shared fio corpus (real fio outputs, perturbed per fs/iteration)."""
from __future__ import annotations

import json
import os
from pathlib import Path

_SHARED = Path(__file__).resolve().parents[2] / "shared/corpus/fio-json"
# the shared corpus when it is beside the checkout, else the copy committed with the tests
# (the same 35 files), so the corpus tests run everywhere and never skip
CORPUS = Path(os.environ.get("FSLAB_CORPUS")
              or (_SHARED if _SHARED.is_dir() else Path(__file__).resolve().parent / "data/fio-json"))

# S2's five jobs, each from a different corpus file (fio 2.x and 3.x mixed on purpose)
S2_SOURCES = {"randread": "01_yardstick_fio-2.1.3.json", "randwrite": "12_ocs-ci_fio-3.7.json",
              "seqread": "14_fio-results-tmp_fio-3.12.json", "seqwrite": "22_signcl-fio-benchmark_fio-3.28.json",
              "mixed": "30_SO-Kernel-trace-extraction_fio-3.36.json"}
FACTORS = {"ext4": 1.0, "btrfs": 0.8}


def s2_layout(root: Path) -> dict:
    """<fs>/fio_results/<iteration>/<job>-result.json; every file's iops scaled by
    fs factor x (1 + iteration/100), so every (fs, job, iteration) value is distinct.
    Returns the expected read/write iops per (fs, job, iteration)."""
    expected = {}
    for fs, f in FACTORS.items():
        for it in range(1, 4):
            for job, name in S2_SOURCES.items():
                doc = json.loads((CORPUS / name).read_text())
                entry = doc["jobs"][0]
                entry["jobname"] = job
                for d in ("read", "write"):
                    entry[d]["iops"] *= f * (1 + it / 100)
                    expected[(fs, job, it, d)] = entry[d]["iops"]
                path = root / fs / "fio_results" / str(it) / f"{job}-result.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(doc))
    return expected
