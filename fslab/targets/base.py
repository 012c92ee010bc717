"""Target contract: where a filesystem lives (loop image, block device, existing mount).

A target hands out block devices (`acquire`) and takes them back (`release`).
It never formats anything itself; drivers do that.
"""
from __future__ import annotations

from abc import ABC, abstractmethod


class Target(ABC):
    kind: str = "?"
    #: False for the existing-mount-point target: nothing to mkfs.
    provides_device: bool = True

    @abstractmethod
    def acquire(self, size_bytes: int, label: str) -> str:
        """Return a block device path ready for mkfs, sized at least size_bytes if it can."""

    @abstractmethod
    def release(self) -> None:
        """Give back every device acquired (idempotent, safe after a crash)."""

    def describe(self) -> dict:
        """What backs the devices (for the environment record)."""
        return {"kind": self.kind}

    def image_paths(self) -> list[str]:
        """Files whose bytes are the devices' bytes (for integrity tests); may be empty."""
        return []
