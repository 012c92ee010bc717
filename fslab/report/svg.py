"""Matplotlib figures as inline SVG: text stays text (small, searchable), ids are made
unique per figure so many SVGs can live in one page without clashing."""
from __future__ import annotations

from typing import Any

import functools
import io
import itertools
import re

_counter = itertools.count()
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_ID = re.compile(r'(id="|url\(#|href="#)([^")]+)')
# matplotlib's default colour cycle (tab10), spelled out so that hand-built panels get the
# same colours without importing matplotlib (0.3 s) for reports that draw nothing with it
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]


@functools.cache
def pyplot() -> Any:
    """matplotlib.pyplot, configured for small inline SVG, imported on first use."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({
        "svg.fonttype": "none", "svg.hashsalt": "fslab", "font.size": 8,
        "axes.spines.top": False, "axes.spines.right": False, "figure.dpi": 96,
    })
    return plt


def colors(levels: list[str]) -> dict[str, str]:
    """A fixed colour per level, the same in every figure of a report."""
    return {lv: PALETTE[i % len(PALETTE)] for i, lv in enumerate(levels)}


def to_svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    pyplot().close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]                   # drop the XML prolog and doctype
    text = _METADATA.sub("", text)                     # RDF metadata: URLs the page never needs
    prefix = f"f{next(_counter)}-"
    return _ID.sub(lambda m: m.group(1) + prefix + m.group(2), text)


def figure(ncols: int = 1, nrows: int = 1, width: float = 2.6, height: float = 2.2) -> Any:
    """A grid of panels with fixed margins (automatic layout costs more than drawing)."""
    fig, axes = pyplot().subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False,
                             gridspec_kw={"left": 0.55 / (width * ncols) * 1.6,
                                          "right": 1 - 0.1 / (width * ncols),
                                          "bottom": 0.45 / (height * nrows), "top": 1 - 0.3 / (height * nrows),
                                          "wspace": 0.45, "hspace": 0.55})
    return fig, axes.ravel()
