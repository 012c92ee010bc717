"""The feature matrix: each filesystem's claim per feature, joined with live probe outcomes.

A cell's status says how far to trust it:
  claimed / not claimed            documentation only (no probe ran)
  verified                         claimed, and the probe saw it work here
  claimed but failed here          claimed, the probe saw it fail (detail says why)
  not claimed, but works           the probe saw a feature the docs do not claim
  confirmed absent                 not claimed, and the probe could not make it work
  inconclusive                     the probe could not tell (detail says why)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pandas as pd

from fslab.features.catalog import FEATURES, Feature
from fslab.features.feature_claims import FeatureClaim, feature_claims_for, implementation_key
from fslab.analysis.groups import level_labels


@dataclass
class ProbeOutcome:
    outcome: str                 # works | fails | inconclusive | mixed
    detail: str
    run_id: str
    artifacts: list[str] = field(default_factory=list)    # probe.json paths (results-relative)
    verified: int = 0            # iterations where it worked
    probed: int = 0              # iterations probed
    enabled_with: str | None = None


@dataclass
class Cell:
    fs: str
    feature: Feature
    feature_claim: FeatureClaim
    probe: ProbeOutcome | None = None

    @property
    def claimed(self) -> bool:
        return self.feature_claim.status in ("yes", "partial")

    @property
    def status(self) -> str:
        p = self.probe
        if p is None:
            return {"yes": "claimed", "partial": "claimed (partial)", "no": "not claimed"}.get(
                self.feature_claim.status, "unknown")
        if p.outcome == "works":
            return "verified" if self.claimed else "not claimed, but works"
        if p.outcome == "fails":
            return "claimed but failed here" if self.claimed else "confirmed absent"
        if p.outcome == "mixed":
            return f"flaky: worked in {p.verified} of {p.probed} probes"
        return "inconclusive"

    @property
    def works(self) -> bool | None:
        """Best knowledge of whether the feature is usable here (probe first, then claim)."""
        if self.probe is not None and self.probe.outcome in ("works", "fails"):
            return self.probe.outcome == "works"
        return None

    def as_dict(self) -> dict:
        return {"fs": self.fs, "feature": self.feature.key, "title": self.feature.title,
                "category": self.feature.category, "claim": self.feature_claim.as_dict(),
                "status": self.status,
                "probe": None if self.probe is None else self.probe.__dict__}


@dataclass
class Matrix:
    filesystems: list[str]
    cells: dict[tuple[str, str], Cell]
    implementations: dict[str, str]
    probe_runs: list[str]

    def cell(self, fs: str, feature: str) -> Cell:
        return self.cells[(fs, feature)]

    def as_dict(self) -> dict:
        return {"filesystems": self.filesystems, "implementations": self.implementations,
                "probe_runs": self.probe_runs,
                "cells": [c.as_dict() for c in self.cells.values()]}


def build(filesystems: list[str], outcomes: dict[tuple[str, str], ProbeOutcome] | None = None,
          implementations: dict[str, str] | None = None) -> Matrix:
    """Claims for every (fs, feature), with the probe outcome where one exists."""
    outcomes = outcomes or {}
    # a level like "zfs:dedup" takes the claims of its filesystem
    impls = {fs: (implementations or {}).get(fs) or implementation_key(fs.split(":")[0])
             for fs in filesystems}
    cells = {}
    for fs in filesystems:
        claims = feature_claims_for(fs, impls[fs])
        for f in FEATURES:
            cells[(fs, f.key)] = Cell(fs, f, claims[f.key], outcomes.get((fs, f.key)))
    runs = sorted({o.run_id for o in outcomes.values()})
    return Matrix(filesystems, cells, impls, runs)


def probe_outcomes(records: pd.DataFrame, results_root: Path | None) -> tuple[
        dict[tuple[str, str], ProbeOutcome], dict[str, str]]:
    """Probe outcomes per (fs label, feature) from `features` records, and each fs's
    implementation (e.g. zfs-fuse) as the probes recorded it."""
    rows = records[(records["suite"] == "features") & (records["metric"] == "verified")]
    if rows.empty:
        return {}, {}
    rows = rows.assign(level=level_labels(rows, ("fs", "variant")))
    out, impls = {}, {}
    for (level, feature), g in rows.groupby(["level", "case"], sort=True):
        docs = [_read(results_root, a) for a in g["artifact"].dropna().unique()]
        docs = [d for d in docs if d]
        verified, probed = int(g["value"].sum()), len(g)
        kinds = {d["outcome"] for d in docs} or {"works" if verified else "fails"}
        outcome = kinds.pop() if len(kinds) == 1 else "mixed"
        detail = "; ".join(sorted({d["detail"] for d in docs})) or (
            "probe.json not found: only the recorded 1/0 is known")
        out[(level, feature)] = ProbeOutcome(
            outcome, detail, str(g["run_id"].iloc[0]), sorted(g["artifact"].dropna().unique()),
            verified, probed, docs[0].get("enabled_with") if docs else None)
        if docs and docs[0].get("implementation"):
            impls[level] = docs[0]["implementation"]
    return out, impls


def _read(root: Path | None, artifact: str) -> dict | None:
    if root is None or not artifact:
        return None
    path = Path(root) / artifact
    if path.is_dir():
        path = path / "probe.json"
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
