"""Ratios as a person says them (metric labels are the catalogue's: fslab.metrics.label)."""
from __future__ import annotations

import math


def ratio_text(ratio: float) -> str:
    """0.0514 -> '0.051×', 0.5 -> '0.50×', 3.21 -> '3.2×', 71.9 -> '72×'."""
    if ratio is None or not math.isfinite(ratio):
        return "n/a"
    if ratio >= 10:
        return f"{ratio:.0f}×"
    if ratio >= 1:
        return f"{ratio:.1f}×"
    if ratio >= 0.1:
        return f"{ratio:.2f}×"
    return f"{ratio:.2g}×"
