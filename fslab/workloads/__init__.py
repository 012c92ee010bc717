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
