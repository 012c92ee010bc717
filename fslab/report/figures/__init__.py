"""Suite-specific report figures: one module per figure family, found automatically.

A module here declares
    SUITES = ("fio",)              # the suites it draws ("*" = any)
    def sections(ctx: FigureContext) -> list[Section]
and returns titled sections of inline SVG or HTML (e.g. S0's block-size sweep, IOPS vs
threads, aging curves, an integrity matrix). Sections are shown under their suite, after
the generic per-metric figures. `html` is inserted as-is: build it with to_svg() or
escape any text you put in it (markupsafe.escape).

A module with `PLACE = "lead"` is instead called once for the whole report (suite "*",
every row) and its sections open the report, after the answer, its decision figures
(figures/decision.py, PLACE = "decision": drawn from the answer's rankings, called by
html.py) and the option table (the recommendation lives there).
"""
from __future__ import annotations

from types import ModuleType
from typing import Iterator

import importlib
import pkgutil
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from fslab.analysis import Analysis


@dataclass
class Section:
    title: str
    html: str                  # trusted markup: inline <svg> or an escaped HTML fragment
    caption: str = ""


@dataclass
class FigureContext:
    analysis: Analysis
    suite: str
    summary: pd.DataFrame      # the suite's rows of analysis.summary
    data: pd.DataFrame         # the suite's rows of analysis.data (records + level, outlier)
    results_root: Path | None = None   # to read raw artifacts (records store relative paths)
    priorities: list[str] | None = None   # the recommendation's priorities, as asked (lead only)


def _modules() -> Iterator[ModuleType]:
    for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not m.name.startswith("_"):
            yield importlib.import_module(f"{__name__}.{m.name}")


def lead_sections(ctx: FigureContext) -> list[Section]:
    """Sections of modules with PLACE = "lead": the report's opening."""
    return [s for m in _modules() if getattr(m, "PLACE", "") == "lead" for s in m.sections(ctx)]


def sections_for(ctx: FigureContext) -> list[Section]:
    out: list[Section] = []
    for module in _modules():
        if getattr(module, "PLACE", "") == "lead":
            continue
        suites = getattr(module, "SUITES", ())
        if "*" in suites or ctx.suite in suites:
            out.extend(module.sections(ctx))
    return out
