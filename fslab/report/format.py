"""Human-readable numbers with their units (the stored value never changes)."""
from __future__ import annotations

import math

_SCALES = {
    "ns": ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1, "ns")),
    "us": ((1e6, "s"), (1e3, "ms"), (1, "µs")),
    "s": ((1, "s"), (1e-3, "ms"), (1e-6, "µs")),
    "B/s": ((1 << 30, "GiB/s"), (1 << 20, "MiB/s"), (1 << 10, "KiB/s"), (1, "B/s")),
    "B": ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"), (1, "B")),
    "ops/s": ((1e6, "M ops/s"), (1e3, "k ops/s"), (1, "ops/s")),
}


def number(x: float) -> str:
    """3 significant digits, thousands separated, never scientific: 1,010 / 38.7 / 0.123."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def human(value: float | None, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if unit == "code":
        return str(int(value))
    if unit == "%":
        return f"{value:.1f}%"
    for scale, name in _SCALES.get(unit, ()):
        if abs(value) >= scale or scale == _SCALES[unit][-1][0]:
            return f"{number(value / scale)} {name}"
    return f"{number(value)} {unit}".rstrip()


def spread(lo: float, hi: float, center: float) -> str:
    """A confidence interval as ±% of the center (benchstat's '±3%'), or '' if unknown."""
    if any(math.isnan(x) for x in (lo, hi, center)) or center == 0:
        return ""
    return f"±{max(hi - center, center - lo) / abs(center) * 100:.0f}%"


def axis_scale(values, unit: str) -> tuple[float, str]:
    """(divisor, unit label) that makes a plot axis readable: ns -> µs or ms, B/s -> MiB/s."""
    import numpy as np
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    top = float(np.max(np.abs(finite))) if finite.size else 0.0
    for scale, name in _SCALES.get(unit, ()):
        if top >= scale or scale == _SCALES[unit][-1][0]:
            return scale, name
    return 1.0, unit
