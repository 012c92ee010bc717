"""Filesystem drivers. Each module defines one driver and `register`s it.

Adding a filesystem = one new module here; it is discovered automatically.
"""
from __future__ import annotations

import importlib
import pkgutil

from fslab.errors import FslabError

_drivers: dict[str, type] = {}


def register(cls):
    _drivers[cls.name] = cls
    return cls


_loaded = False


def _load_all() -> None:
    # a flag, not `if _drivers`: a driver module imported directly (e.g. raw's helpers)
    # registers itself early and must not stop the others from loading
    global _loaded
    if _loaded:
        return
    _loaded = True
    for m in pkgutil.iter_modules(__path__):
        if not m.name.startswith("_") and m.name != "base":
            importlib.import_module(f"{__name__}.{m.name}")


def names() -> list[str]:
    _load_all()
    return sorted(_drivers)


def get(name: str):
    """A driver instance by name ('ext4', 'zfs', ...)."""
    _load_all()
    try:
        return _drivers[name]()
    except KeyError:
        raise FslabError(f"unknown filesystem {name!r}; known: {', '.join(sorted(_drivers))}") from None
