""""The study said -> here": each reference study's conclusions, re-derived from a run.

The claims are data (fslab/data/claims/*.toml, one file per study, from the study
documents as ../shared/studies.md quotes them): a sentence, the published numbers, and
the comparisons that test it (model.py). A study's claims are shown for a run of its
plan, or with records of its own suites. Each claim gets this run's measurement and a
verdict (judge.py, kinds.py):

  holds                           the direction (and the size band, for "about N x")
                                  replicated here
  direction holds, size differs   significant as claimed, but the ratio's interval lies
                                  outside the stated band around the published figure
  direction holds, size not shown the interval reaches outside the band
  reversed                        the opposite direction, significantly
  does not reproduce              a quantity identical in every round (capacity after
                                  mkfs) differs from the claim, or an equivalence fails
  no significant difference       no comparison of the claim is significant
  undecided                       an equivalence neither shown nor refuted; a sweep with
                                  too few points as claimed; one round (S4's one history):
                                  no test, the study's own single-run reading is told
  not comparable                  ZFS here is zfs-fuse and the claim is about speed or CPU
  not measured                    a filesystem, case or sweep point of the claim not run

The paper's own single run cannot be modelled, so "holds" means the direction (and size
band) replicated here, not that this run matches the paper's numbers. Two-sample tests are
the answer's own (fslab.analysis.pairwise) at fslab.analysis.significance.ALPHA, Holm-
corrected within a claim's family of comparisons; claims are not corrected against each
other: each is a question the study asked.
"""
from __future__ import annotations

import functools

import tomllib
from importlib import resources

import pandas as pd

from fslab.report.claims import context
from fslab.report.claims.derived import s2_rows
from fslab.report.claims.judge import VERDICTS
from fslab.report.claims.kinds import judge
from fslab.report.claims.model import Claim, load_claims, parse
from fslab.report.claims.views import HOLDS_MEANS, html_rows, markdown, print_claims
from fslab.records import level_label
from fslab.store.environment import RunEnvironment

__all__ = ["VERDICTS", "HOLDS_MEANS", "Claim", "load_claims", "claims_json", "evaluate",
           "print_claims", "markdown", "html_rows", "deviations"]


def claims_json(run: dict | None, records: pd.DataFrame) -> list[dict]:
    """The report --json "claims" key: [{study, claim, published, measured, verdict, why}]."""
    return evaluate(records, RunEnvironment.of_run(run), context.plan_name(run))


@functools.cache
def studies() -> tuple[dict, ...]:
    """Each study file, parsed once per process (they ship with fslab): its keys and its
    claims. Read-only: every report and dry run reads the same ones."""
    out = []
    folder = resources.files("fslab") / "data" / "claims"
    for f in sorted(folder.iterdir(), key=lambda p: p.name):
        if f.name.endswith(".toml"):
            doc = tomllib.loads(f.read_text())
            out.append({**doc, "claims": parse(doc)})
    return tuple(out)


def deviations(plan: str) -> tuple[str, list[str]]:
    """(the study's file, its declared deviations from the study document) for a plan named
    after a study ('S3 file-server tasks' -> S3), or ("", [])."""
    for study in studies():
        if plan.startswith(f"{study['study']} "):
            return f"fslab/data/claims/{study['study'].lower()}.toml", list(study.get("deviations") or [])
    return "", []


def evaluate(records: pd.DataFrame, environment: RunEnvironment | dict,
             plan: str = "") -> list[dict]:
    """Every claim of every study this run belongs to, with its verdict."""
    if records.empty:
        return []
    environment = RunEnvironment.of(environment)
    recs = records.copy()
    recs["label"] = [level_label(f, v) for f, v in zip(recs["fs"], recs["variant"])]
    out = []
    for study in studies():
        if not _applies(study, recs, plan):
            continue
        out += [judge(c, recs, environment) for c in study["claims"]]
        if study.get("derived"):
            out += s2_rows(study, recs, environment)
    return out


def _applies(study: dict, recs: pd.DataFrame, plan: str) -> bool:
    """A study with `plan` (its claims use a generic suite, fio) applies to runs of that
    plan only; the others to any run with records of their own suites and cases."""
    if study.get("plan"):
        return plan.startswith(study["plan"])
    ran = set(zip(recs["suite"], recs["case"]))
    suites = {suite for suite, _ in ran}
    return any(c.suite in suites and (not c.cases or any((c.suite, case) in ran for case in c.cases))
               for c in study["claims"])
