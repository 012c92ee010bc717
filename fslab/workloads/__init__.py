"""Workloads (suites). Each module defines one Suite and registers it; discovered automatically."""
from __future__ import annotations

import importlib
import pkgutil

from fslab.errors import FslabError
from fslab.workloads.base import _suites


def _load_all() -> None:
    for m in pkgutil.iter_modules(__path__):
        if not m.ispkg and not m.name.startswith("_") and m.name != "base":
            importlib.import_module(f"{__name__}.{m.name}")


def names() -> list[str]:
    _load_all()
    return sorted(_suites)


def get(name: str):
    _load_all()
    try:
        return _suites[name]()
    except KeyError:
        raise FslabError(f"unknown suite {name!r}; known: {', '.join(sorted(_suites))}") from None


def scales_a_study(plan) -> bool:
    """Whether `plan`'s profile runs any of its suites smaller than the study it comes
    from ("scaled down from the studies" is said only then: not of a database, a replay
    or the user's own job files)."""
    return plan.profile.scaled and any(get(s.kind).scales_a_study(s) for s in plan.suite)
