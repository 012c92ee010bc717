"""Ratios as a person says them (metric labels are the catalogue's: fslab.metrics.label)."""
from __future__ import annotations

import math


def ratio_text(ratio: float) -> str:
    """0.0514 -> '0.051×', 0.5 -> '0.50×', 3.21 -> '3.2×', 71.9 -> '72×'; a ratio that
    would print as 1 but is not gets the digits that tell it from 1 (1.003 -> '1.003×'):
    beside a "≫" a '1.0×' reads as a contradiction."""
    if ratio is None or not math.isfinite(ratio):
        return "n/a"
    if ratio >= 10:
        text = f"{ratio:.0f}"
    elif ratio >= 1:
        text = f"{ratio:.1f}"
    elif ratio >= 0.1:
        text = f"{ratio:.2f}"
    else:
        text = f"{ratio:.2g}"
    if float(text) == 1 and ratio != 1:
        text = next((t for t in (f"{ratio:.{d}f}" for d in (2, 3, 4)) if float(t) != 1),
                    f"{ratio:.4f}")
    return f"{text}×"
