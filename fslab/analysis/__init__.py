"""One statistics engine for every suite: records in, comparison tables out."""
from __future__ import annotations

import importlib
from typing import Any

# name -> the module that defines it; loaded on first use, because the engine pulls in
# scipy.stats (about 2 s to import) and a command that needs only a small part of the
# package (the dry run's rounds_needed from tiers) must not pay for it
_EXPORTS = {"Analysis": "engine", "analyze": "engine", "FS_FACTOR": "groups"}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"fslab.analysis.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
