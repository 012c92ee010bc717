"""Small panel charts as hand-built SVG: bars, error bars, boxes, dots, lines, text.

The report draws one panel per (workload, headline metric): a 10,000-file import has
~150 of them, and matplotlib spends ~0.1 s on each; these cost ~1 ms. Plain SVG elements
(rect, line, circle, path, text) in the matplotlib look (same palette and sizes);
every text is escaped. Study figures with richer needs keep using matplotlib (svg.py).
"""
from __future__ import annotations

from typing import Callable, Iterable, Sequence, TypeGuard

import math
import textwrap

from markupsafe import escape

PX = 96                      # px per inch: panel sizes are given in inches, as for matplotlib
FONT = 'font-family="DejaVu Sans, Arial, sans-serif"'


def _f(v: float) -> str:
    return f"{v:.1f}"


def css(color: str | Sequence[float]) -> str:
    """A colour as SVG takes it: names and '#rrggbb' as they are, RGB(A) tuples as hex."""
    if isinstance(color, str):
        return color
    return "#" + "".join(f"{round(c * 255):02x}" for c in tuple(color)[:3])


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values (1, 2, 2.5, 5 x 10^k steps) covering lo..hi, about n of them."""
    if not hi > lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9)
    return [round(k * step, 12) for k in range(first, math.floor(hi / step + 1e-9) + 1)]


def log_ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten between 10**lo and 10**hi; 1-2-5 steps when that gives fewer than two."""
    for mantissas in ((1,), (1, 2, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9)):
        ticks = [m * 10.0 ** k for k in range(math.floor(lo), math.ceil(hi) + 1) for m in mantissas
                 if lo <= math.log10(m * 10.0 ** k) <= hi]
        if len(ticks) >= 2:
            return ticks
    return ticks


def tick_label(v: float) -> str:
    return f"{v:g}" if abs(v) < 1e5 else f"{v:.3g}"


class Panel:
    """One plot area. x is categorical-friendly data units (or log: xlim in decades);
    y is linear or log."""

    def __init__(self, left: float, top: float, width: float, height: float):
        self.left, self.top, self.w, self.h = left, top, width, height
        self.parts: list[str] = []
        self.xlim, self.ylim, self.log, self.xlog = (0.0, 1.0), (0.0, 1.0), False, False

    def limits(self, xlim: tuple[float, float], values: Iterable[float], log: bool = False, zero: bool = False,
               xlog: bool = False) -> None:
        """x range as given (xlog: in decades, log10 of the data); y range covering `values`
        (and 0 for bars) with a 5% margin (log: a 5% margin in decades), like matplotlib's
        autoscale."""
        vals = [v for v in values if math.isfinite(v) and (v > 0 or not log)] or [1.0]
        lo, hi = min(vals), max(vals)
        if log:
            lo, hi = math.log10(lo), math.log10(hi)
        elif zero:
            lo, hi = min(lo, 0.0), max(hi, 0.0)
        pad = (hi - lo) * 0.05 or (abs(hi) * 0.05 or 1.0)
        lo = lo if (zero and lo == 0 and not log) else lo - pad
        hi = hi if (zero and hi == 0 and not log) else hi + pad
        if not hi > lo:   # bars of all zeros (no major page faults anywhere): an axis 0..1
            hi = lo + 1.0
        self.xlim, self.ylim, self.log, self.xlog = xlim, (lo, hi), log, xlog

    def x(self, v: float) -> float:
        a, b = self.xlim
        v = math.log10(v) if self.xlog else v
        return self.left + (v - a) / (b - a) * self.w

    def polyline(self, xs: Iterable[float], ys: Iterable[float], color: str = "black", width: float = 1.0, opacity: float = 1.0) -> None:
        """A line through the points (non-finite ones skipped), as one path."""
        pts = [(self.x(x), self.y(y)) for x, y in zip(xs, ys)
               if math.isfinite(x) and math.isfinite(y) and (x > 0 or not self.xlog)
               and (y > 0 or not self.log)]
        if len(pts) < 2:
            return
        d = "M" + "L".join(f"{_f(px)} {_f(py)}" for px, py in pts)
        self.parts.append(f'<path d="{d}" fill="none" stroke="{css(color)}" stroke-width="{width}" '
                          f'stroke-opacity="{opacity}"/>')

    def y(self, v: float) -> float:
        a, b = self.ylim
        v = math.log10(v) if self.log else v
        return self.top + self.h - (v - a) / (b - a) * self.h

    def rect(self, x0: float, x1: float, y0: float, y1: float, color: str, opacity: float = 1.0,
             stroke: str = "none") -> None:
        if self.log:
            y0 = max(y0, 10 ** self.ylim[0])
        top, bottom = sorted((self.y(y0), self.y(y1)))
        self.parts.append(f'<rect x="{_f(self.x(x0))}" y="{_f(top)}" width="{_f(self.x(x1) - self.x(x0))}" '
                          f'height="{_f(bottom - top)}" fill="{css(color)}" fill-opacity="{opacity}" '
                          f'stroke="{stroke}" stroke-width="0.8"/>')

    def line(self, x0: float, y0: float, x1: float, y1: float, color: str = "black",
             width: float = 1.0) -> None:
        self.parts.append(f'<line x1="{_f(self.x(x0))}" y1="{_f(self.y(y0))}" x2="{_f(self.x(x1))}" '
                          f'y2="{_f(self.y(y1))}" stroke="{css(color)}" stroke-width="{width}"/>')

    def dots(self, xs: Iterable[float], ys: Iterable[float], color: str = "black", r: float = 1.6, ring: bool = False) -> None:
        style = f'fill="none" stroke="{css(color)}"' if ring else f'fill="{css(color)}"'
        self.parts.extend(f'<circle cx="{_f(self.x(x))}" cy="{_f(self.y(y))}" r="{r}" {style}/>'
                          for x, y in zip(xs, ys) if math.isfinite(y))

    def error_bar(self, x: float, lo: float, hi: float, cap: float = 0.08) -> None:
        self.line(x, lo, x, hi)
        for v in (lo, hi):
            self.line(x - cap, v, x + cap, v)

    def box(self, x: float, stats: dict, width: float = 0.35) -> None:
        """A box plot (quartiles, median line, whiskers), as matplotlib draws one."""
        h = width / 2
        self.rect(x - h, x + h, stats["q1"], stats["q3"], "white", 0.0, stroke="black")
        self.line(x - h, stats["med"], x + h, stats["med"])
        self.line(x, stats["whislo"], x, stats["q1"])
        self.line(x, stats["q3"], x, stats["whishi"])
        for v in (stats["whislo"], stats["whishi"]):
            self.line(x - h / 2, v, x + h / 2, v)

    def text(self, px: float, py: float, text: str, size: float = 8, anchor: str = "middle",
             rotate: float = 0) -> None:
        turn = f' transform="rotate({rotate} {_f(px)} {_f(py)})"' if rotate else ""
        self.parts.append(f'<text x="{_f(px)}" y="{_f(py)}" font-size="{size}" text-anchor="{anchor}"'
                          f'{turn}>{escape(text)}</text>')

    def axes(self, xticks: list[float], xlabels: list[str], rotate: bool = False,
             yticks: list[tuple[float, str]] | None = None) -> None:
        """Left and bottom spines, y ticks with labels (automatic, or (value, label) pairs),
        x tick labels."""
        bottom, left = self.top + self.h, self.left
        self.parts.append(f'<path d="M{_f(left)} {_f(self.top)}V{_f(bottom)}H{_f(left + self.w)}" '
                          'fill="none" stroke="black" stroke-width="0.8"/>')
        lo, hi = self.ylim
        ticks = log_ticks(lo, hi) if self.log else nice_ticks(lo, hi)
        for t, label in yticks or [(t, tick_label(t)) for t in ticks]:
            py = self.y(t)
            self.parts.append(f'<line x1="{_f(left - 3)}" y1="{_f(py)}" x2="{_f(left)}" y2="{_f(py)}" '
                              'stroke="black" stroke-width="0.8"/>')
            self.text(left - 5, py + 3, label, 7, "end")
        for t, label in zip(xticks, xlabels):
            px = self.x(t)
            self.parts.append(f'<line x1="{_f(px)}" y1="{_f(bottom)}" x2="{_f(px)}" y2="{_f(bottom + 3)}" '
                              'stroke="black" stroke-width="0.8"/>')
            if rotate:
                self.text(px, bottom + 12, label, 7, "end", rotate=-30)
            else:
                self.text(px, bottom + 12, label, 7)

    def labels(self, title: str = "", ylabel: str = "") -> None:
        if title:
            self.text(self.left + self.w / 2, self.top - 6, title, 8)
        if ylabel:
            cx, cy = self.left - 38, self.top + self.h / 2
            self.text(cx, cy, ylabel, 7, rotate=-90)

    def legend(self, entries: list[tuple[str, str]], left: bool = False, bottom: bool = False) -> None:
        """(label, colour) swatches in the panel's upper right (or left; or lower) corner."""
        for i, (label, color) in enumerate(entries):
            py = (self.top + self.h - 10 - (len(entries) - 1 - i) * 9) if bottom else self.top + 4 + i * 9
            px = self.left + 4 if left else self.left + self.w - 10
            self.parts.append(f'<rect x="{_f(px)}" y="{_f(py)}" width="6" height="6" fill="{css(color)}"/>')
            if left:
                self.text(px + 8, py + 6, label, 6, "start")
            else:
                self.text(px - 2, py + 6, label, 6, "end")


class Grid:
    """Panels in rows and columns, margins fixed (as svg.figure's)."""

    def __init__(self, n: int, ncols: int, width: float = 2.6, height: float = 2.2):
        self.ncols = max(1, min(ncols, n))
        self.nrows = -(-n // self.ncols)
        self.cell_w, self.cell_h = width * PX, height * PX
        margin_l, margin_r, margin_t, margin_b = 52, 10, 22, 42
        self.panels = [Panel(c * self.cell_w + margin_l, r * self.cell_h + margin_t,
                             self.cell_w - margin_l - margin_r, self.cell_h - margin_t - margin_b)
                       for r in range(self.nrows) for c in range(self.ncols)][:n]

    def svg(self) -> str:
        w, h = self.ncols * self.cell_w, self.nrows * self.cell_h
        body = "".join(p for panel in self.panels for p in panel.parts)
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_f(w)}" height="{_f(h)}" '
                f'viewBox="0 0 {_f(w)} {_f(h)}" {FONT}>{body}</svg>')


def box_stats(values: Iterable[float]) -> dict:
    """Quartiles and 1.5 IQR whiskers as matplotlib's boxplot computes them."""
    import numpy as np
    v = np.asarray(values, dtype=float)
    q1, med, q3 = np.percentile(v, [25, 50, 75])
    iqr = q3 - q1
    inside_lo, inside_hi = v[v >= q1 - 1.5 * iqr], v[v <= q3 + 1.5 * iqr]
    return {"q1": q1, "med": med, "q3": q3,
            "whislo": float(inside_lo.min()) if inside_lo.size else q1,
            "whishi": float(inside_hi.max()) if inside_hi.size else q3}


def dot_interval(rows: list[dict], title: str, axis: str, log: bool, reference: float | None = 1.0,
                 width: float = 560, tick_format: Callable[[float], str] | None = None) -> str:
    """A forest plot: one row per item (top to bottom), a dot at `value` with a horizontal
    whisker from `lo` to `hi` where both are finite, the row's `label` on the left and its
    `note` on the right; a dashed line at `reference`. rows: dicts with label, value, lo,
    hi, color, note. log: the value axis in decades (ratios)."""
    row_h, top, right, bottom = 22, 26, 200, 34
    # room for the longest label (10 px text: about 6 px a character): the figure widens,
    # the plot keeps its width
    left = max(90, 6 * max((len(str(r["label"])) for r in rows), default=0) + 16)
    plot_w = width - 90 - right
    width = left + plot_w + right
    # a title longer than the figure (a decide's measure over several workloads) wraps,
    # one 14 px line each, instead of running past the right edge
    title_lines = textwrap.wrap(title, max(20, int((width - 16) / 6.6))) or [""]
    top += 14 * (len(title_lines) - 1)
    height = top + row_h * len(rows) + bottom
    panel = Panel(left, top, plot_w, row_h * len(rows))
    shown = [v for r in rows for v in (r["value"], r.get("lo"), r.get("hi"))
             if isinstance(v, (int, float)) and math.isfinite(v) and (v > 0 or not log)]
    if reference is not None:
        shown.append(reference)
    shown = shown or [1.0]
    lo, hi = min(shown), max(shown)
    if log:
        lo, hi = math.log10(lo), math.log10(hi)
    pad = (hi - lo) * 0.06 or 0.1
    panel.limits((lo - pad, hi + pad), [0, len(rows)], xlog=log)
    panel.ylim = (0, len(rows))
    ticks = log_ticks(lo - pad, hi + pad) if log else nice_ticks(lo - pad, hi + pad)
    fmt = tick_format or tick_label
    bottom_y = top + row_h * len(rows)
    parts = panel.parts
    parts.append(f'<path d="M{_f(left)} {_f(bottom_y)}H{_f(left + plot_w)}" fill="none" '
                 'stroke="black" stroke-width="0.8"/>')
    for t in ticks:
        px = panel.x(t)
        parts.append(f'<line x1="{_f(px)}" y1="{_f(top)}" x2="{_f(px)}" y2="{_f(bottom_y + 3)}" '
                     'stroke="#ddd" stroke-width="0.6"/>')
        panel.text(px, bottom_y + 13, fmt(t), 8)
    if reference is not None:
        px = panel.x(reference)
        parts.append(f'<line x1="{_f(px)}" y1="{_f(top - 4)}" x2="{_f(px)}" y2="{_f(bottom_y)}" '
                     'stroke="#555" stroke-width="0.8" stroke-dasharray="3 2"/>')
    for i, r in enumerate(rows):
        cy = top + row_h * (i + 0.5)
        if i % 2:
            parts.append(f'<rect x="0" y="{_f(cy - row_h / 2)}" width="{_f(width)}" '
                         f'height="{row_h}" fill="#f6f6f6"/>')
            parts.insert(0, parts.pop())          # the band goes under everything
        panel.text(left - 8, cy + 4, r["label"], 10, "end")
        panel.text(left + plot_w + 10, cy + 4, r.get("note", ""), 9, "start")
        lo_v, hi_v, v = r.get("lo"), r.get("hi"), r["value"]

        def ok(x: object) -> TypeGuard[float]:
            return isinstance(x, (int, float)) and math.isfinite(x) and (x > 0 or not log)
        color = css(r.get("color", "black"))
        if ok(lo_v) and ok(hi_v) and hi_v > lo_v:
            x0, x1 = panel.x(lo_v), panel.x(hi_v)
            parts.append(f'<line x1="{_f(x0)}" y1="{_f(cy)}" x2="{_f(x1)}" y2="{_f(cy)}" '
                         f'stroke="{color}" stroke-width="2"/>')
            for px in (x0, x1):
                parts.append(f'<line x1="{_f(px)}" y1="{_f(cy - 5)}" x2="{_f(px)}" y2="{_f(cy + 5)}" '
                             f'stroke="{color}" stroke-width="1.4"/>')
        if ok(v):
            parts.append(f'<circle cx="{_f(panel.x(v))}" cy="{_f(cy)}" r="5" fill="{color}"/>')
    # over the plot, or from the figure's edge where it would run past the right (11 px text)
    for k, line in enumerate(title_lines):
        panel.text(left if left + 6.6 * len(line) < width else 8, 14 + 14 * k, line, 11, "start")
    panel.text(left + plot_w / 2, height - 4, axis, 9)
    body = "".join(parts)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{_f(width)}" height="{_f(height)}" '
            f'viewBox="0 0 {_f(width)} {_f(height)}" {FONT}>{body}</svg>')
