"""Human-readable numbers with their units (the stored value never changes).

The one number format of every output: the run summary, the report's terminal, Markdown
and HTML tables, `fslab compare` and the claims all print a value through this module,
so the same value reads the same everywhere (172 k ops/s, 1.01 GiB/s).
"""
from __future__ import annotations

import math
from typing import Iterable

_SCALES = {
    "ns": ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1, "ns")),
    "us": ((1e6, "s"), (1e3, "ms"), (1, "µs")),
    "s": ((1, "s"), (1e-3, "ms"), (1e-6, "µs")),
    "B/s": ((1 << 30, "GiB/s"), (1 << 20, "MiB/s"), (1 << 10, "KiB/s"), (1, "B/s")),
    "B": ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"), (1, "B")),
    "ops/s": ((1e6, "M ops/s"), (1e3, "k ops/s"), (1, "ops/s")),
}
_SCALES["bytes/s"], _SCALES["bytes"] = _SCALES["B/s"], _SCALES["B"]
_SCALES["tx/s"] = ((1e6, "M tx/s"), (1e3, "k tx/s"), (1, "tx/s"))   # the app suites' tps


def number(x: float) -> str:
    """3 significant digits, thousands separated, never scientific: 1,010 / 38.7 / 0.123."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def cell(x: object) -> str:
    """A table cell without a unit (raw medians, p-values, counts): floats as number()."""
    if isinstance(x, float):
        return "" if math.isnan(x) else number(x)
    return str(x)


def _scale(value: float, unit: str) -> tuple[float, str]:
    """(divisor, display unit) that suit value: 3e7 B/s -> MiB/s."""
    for scale, name in _SCALES.get(unit, ()):
        if abs(value) >= scale or scale == _SCALES[unit][-1][0]:
            return scale, name
    return 1.0, unit


# units human() does not print beside a value: a heading says them ("device IOs [count]")
UNSAID = ("code", "count", "fraction")


def heading(label: str, unit: str) -> str:
    """A column or row heading of values human() prints: the unit in brackets only where
    the values do not say it ("[ns]" stood over values printed in µs)."""
    return f"{label} [{unit}]" if unit in UNSAID or not unit else label


def human(value: float | None, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if unit == "code":
        return str(int(value))
    if unit == "count":         # "53,145", not "53,145 count" (the heading says count)
        return number(value)
    if unit == "%":
        return f"{value:.1f}%"
    if unit == "ratio":         # write amplification 34.8×, not "34.8 ratio"
        return f"{number(value)}×"
    if unit == "fraction":      # a share of a whole, 0 to 1 (a layout score 0.964, not 0.964×)
        return number(value)
    scale, name = _scale(value, unit)
    return f"{number(value / scale)} {name}".rstrip()


def human_spread(median: float, lo: float, hi: float, unit: str) -> str:
    """'33.1 MiB/s (32.9–33.2)': the median as human() prints it, the range in its unit
    (none where every value is the median: "0 count (0–0)" was printed)."""
    if lo == hi == median:
        return human(median, unit)
    if unit in ("code", "%", "ratio", "fraction", "count"):
        return f"{human(median, unit)} ({human(lo, unit)}–{human(hi, unit)})"
    scale, _ = _scale(median, unit)
    return f"{human(median, unit)} ({number(lo / scale)}–{number(hi / scale)})"


def spread(lo: float, hi: float, center: float) -> str:
    """A confidence interval as ±% of the center (benchstat's '±3%'), or '' if unknown."""
    if any(math.isnan(x) for x in (lo, hi, center)) or center == 0:
        return ""
    return f"±{max(hi - center, center - lo) / abs(center) * 100:.0f}%"


def axis_scale(values: Iterable[float], unit: str) -> tuple[float, str]:
    """(divisor, unit label) that makes a plot axis readable: ns -> µs or ms, B/s -> MiB/s."""
    import numpy as np
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    top = float(np.max(np.abs(finite))) if finite.size else 0.0
    for scale, name in _SCALES.get(unit, ()):
        if top >= scale or scale == _SCALES[unit][-1][0]:
            return scale, name
    return 1.0, unit


def clip(text: str, limit: int) -> str:
    """`text` in at most `limit` characters, cut after a whole word with '…' (a failure's
    reason cut at a fixed count ended mid-word)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit - 1]
    return cut.rstrip(" |,;:") + "…"
