"""Recommendation: which filesystem, for these priorities, on this evidence (docs/recommend.md)."""
from __future__ import annotations

from fslab.recommend.priorities import BUILTIN, Priorities, load
from fslab.recommend.evidence import Evidence, gather
from fslab.recommend.explain import paragraph
from fslab.recommend.score import Recommendation, score


def recommend(ev: Evidence, pri: Priorities) -> Recommendation:
    rec = score(ev, pri)
    rec.paragraph = paragraph(rec)
    return rec


def recommend_run(store, run_id: str, priorities: str | Priorities) -> Recommendation:
    pri = priorities if isinstance(priorities, Priorities) else load(priorities)
    return recommend(gather(store, run_id), pri)


__all__ = ["BUILTIN", "Priorities", "Recommendation", "load", "recommend", "recommend_run"]
