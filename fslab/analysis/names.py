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


# a difference this large (x100 and more) is printed without digits: 3 rounds of 27
# candidates gave "105603587209214.8%", true of the model and nothing a person can read
OVER_100 = 99.0


def difference_text(x: float | None) -> str:
    """A relative difference as a person says it: a percent up to 900% ('57.8%'), a ratio
    from 10x ('89×', where '8752.4%' was printed), 'over 100×' past that."""
    if x is None or not math.isfinite(x):
        return "n/a"
    if x >= OVER_100:
        return "over 100×"
    if x >= 9:
        return ratio_text(1 + x)
    return f"{x:.1%}"


def bound_text(x: float) -> str:
    """An interval's end for a ratio: three decimals near 1 (0.977), whole above 10 (114,
    not 113.674)."""
    return f"{x:.0f}" if x >= 10 else f"{x:.3f}"
