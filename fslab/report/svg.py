"""Matplotlib figures as inline SVG: text stays text (small, searchable), ids are made
unique per figure so many SVGs can live in one page without clashing."""
from __future__ import annotations

import io
import itertools
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

plt.rcParams.update({
    "svg.fonttype": "none", "svg.hashsalt": "fslab", "font.size": 8,
    "axes.spines.top": False, "axes.spines.right": False, "figure.dpi": 96,
})
_counter = itertools.count()
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_ID = re.compile(r'(id="|url\(#|href="#)([^")]+)')
PALETTE = plt.rcParams["axes.prop_cycle"].by_key()["color"]


def colors(levels: list[str]) -> dict[str, str]:
    """A fixed colour per level, the same in every figure of a report."""
    return {lv: PALETTE[i % len(PALETTE)] for i, lv in enumerate(levels)}


def to_svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]                   # drop the XML prolog and doctype
    text = _METADATA.sub("", text)                     # RDF metadata: URLs the page never needs
    prefix = f"f{next(_counter)}-"
    return _ID.sub(lambda m: m.group(1) + prefix + m.group(2), text)


def figure(ncols: int = 1, nrows: int = 1, width: float = 2.6, height: float = 2.2):
    """A grid of panels with fixed margins (automatic layout costs more than drawing)."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False,
                             gridspec_kw={"left": 0.55 / (width * ncols) * 1.6,
                                          "right": 1 - 0.1 / (width * ncols),
                                          "bottom": 0.45 / (height * nrows), "top": 1 - 0.3 / (height * nrows),
                                          "wspace": 0.45, "hspace": 0.55})
    return fig, axes.ravel()
