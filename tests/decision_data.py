"""Decisions for the renderers' tests: a stored decision's JSON (version 1, as fslab wrote it
before the types) with every key a test does not name at a plain default."""
from __future__ import annotations

from fslab.decide.result import Decision

BASE = {"run": "r", "verdict": "tie", "winner": "ext4", "ties": [], "equivalent": False,
        "stopped": "rounds or budget spent", "finalists": [], "metric": "write IOPS",
        "better": "higher", "metrics": {}, "delta": 0.03, "max_rounds": 10, "alpha": 0.05,
        "alpha_per_look": None, "candidates": [], "mde": 0.2, "rounds": 10, "units_run": 20,
        "units_full_factorial": 20, "left_out": [], "commands": [], "traded": []}


def decision(**kw) -> Decision:
    """A decision as stored by fslab before schema versions ("winner": the leader)."""
    return Decision.from_json({**BASE, **kw})
