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


def tool_versions(names: list[str]) -> dict[str, str]:
    """The versions of the named filesystems' tools, and the implementation where a name has
    several (e.g. "zfs implementation": "zfs-fuse 0.7.0 (FUSE daemon)"), for the run's record."""
    out: dict[str, str] = {}
    for name in names:
        try:
            driver = get(name)
            out.update(driver.versions())
            if driver.implementation_label() != name:
                out[f"{name} implementation"] = driver.implementation_label()
        except Exception as e:   # a broken tool must not stop the run's record
            out[name] = f"unknown ({e})"
    return out


def in_memory(fstype: str) -> bool:
    """Whether a host filesystem of this type keeps its files in RAM (a --workdir there puts
    the loop images in memory: no disk is measured)."""
    return fstype in ("tmpfs", "ramfs")
