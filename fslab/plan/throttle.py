"""How a candidate's `throttle` is written ("5%" or 0.05) and said: the plan's side of the
planted slowdown (what it does to fio's jobs: fslab/fio/throttle.py)."""
from __future__ import annotations

from typing import Any

MAX_FRACTION = 0.5


def parse(value: Any) -> float:
    """'5%' or 0.05 -> 0.05; a fraction in (0, 0.5]."""
    text = str(value).strip()
    try:
        x = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise ValueError(f"throttle {value!r}: a percentage such as \"5%\" (or the "
                         "fraction 0.05)") from None
    if not 0 < x <= MAX_FRACTION:
        raise ValueError(f"throttle {value!r}: between 0% and {MAX_FRACTION:.0%}")
    return x


def percent(x: float) -> str:
    """0.05 -> '5%', 0.025 -> '2.5%'."""
    return f"{x * 100:.4g}%"
