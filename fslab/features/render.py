"""The feature matrix as a terminal table, as Markdown, and S0's point-by-point comparison."""
from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from fslab.features.catalog import CATEGORIES, FEATURES
from fslab.features.matrix import Cell, Matrix

_MARK = {"verified": "✓ verified", "claimed but failed here": "✗ failed here",
         "not claimed, but works": "! works anyway", "confirmed absent": "✓ absent",
         "inconclusive": "? inconclusive"}


def _short(cell: Cell) -> str:
    mark = _MARK.get(cell.status, "" if cell.probe is None else cell.status)
    head = cell.feature_claim.note if cell.feature.value else cell.feature_claim.status
    return head + (f" · {mark}" if mark else "")


def _headers(m: Matrix) -> list[str]:
    return [fs if m.implementations.get(fs, fs) == fs else f"{fs} ({m.implementations[fs]})"
            for fs in m.filesystems]


def rich_table(m: Matrix) -> tuple[Table, list[str]]:
    """The matrix with one short cell per (feature, fs); details as numbered notes."""
    t = Table(title="fslab features" + (f" — probes from run {', '.join(m.probe_runs)}"
                                        if m.probe_runs else " — documented claims (no probes)"),
              title_justify="left", show_lines=False)
    t.add_column("category")
    t.add_column("feature")
    for h in _headers(m):
        t.add_column(h, overflow="fold")
    notes: list[str] = []
    last = None
    for f in FEATURES:
        row = []
        for fs in m.filesystems:
            c = m.cell(fs, f.key)
            text = _short(c)
            if c.probe is not None and c.status not in ("verified", "confirmed absent"):
                notes.append(f"{fs} {f.title}: {c.probe.detail}")
                text += f" [{len(notes)}]"
            row.append(escape(text))
        t.add_row(f.category if f.category != last else "", f.title, *row)
        last = f.category
    return t, [f"[{i}] {n}" for i, n in enumerate(notes, 1)]


def markdown(m: Matrix) -> str:
    """One table per category; every cell carries claim, note, reference and probe outcome."""
    out = ["# Feature matrix", ""]
    if m.probe_runs:
        out.append(f"Live probes from run {', '.join(m.probe_runs)} (suite `features`, "
                   "metric `verified`; evidence in each unit's probe.json).")
    else:
        out.append("Documented claims only; `fslab features --probe` checks them live.")
    impl = [f"{fs} = {i}" for fs, i in m.implementations.items() if i != fs]
    if impl:
        out.append("Implementations: " + ", ".join(impl) + ".")
    for cat in CATEGORIES:
        out += ["", f"## {cat.capitalize()}", "",
                "| feature | " + " | ".join(_headers(m)) + " |",
                "|---|" + "---|" * len(m.filesystems)]
        for f in (f for f in FEATURES if f.category == cat):
            cells = [_md_cell(m.cell(fs, f.key)) for fs in m.filesystems]
            out.append(f"| {f.title} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _md_cell(c: Cell) -> str:
    text = f"**{c.feature_claim.status}** — {c.feature_claim.note}"
    if c.feature_claim.ref:
        text += f" ({c.feature_claim.ref})"
    if c.probe is not None:
        text += f"<br>*{c.status}*: {c.probe.detail}"
    return text.replace("|", "\\|")


def point_by_point(m: Matrix, a: str, b: str) -> str:
    """S0's closing comparison of two filesystems, feature by feature, with the evidence."""
    out = [f"# {a} vs {b}: point by point", ""]
    for cat in CATEGORIES:
        out += [f"## {cat.capitalize()}", ""]
        for f in (f for f in FEATURES if f.category == cat):
            ca, cb = m.cell(a, f.key), m.cell(b, f.key)
            out.append(f"- **{f.title}** — {_edge(ca, cb)}. "
                       f"{a}: {_sentence(ca)} {b}: {_sentence(cb)}")
        out.append("")
    return "\n".join(out)


def _has(c: Cell) -> float:
    """1 works, 0.5 partial, 0 absent (a probe outcome overrides the claim)."""
    if c.works is not None:
        return 1.0 if c.works and c.feature_claim.status != "partial" else 0.5 if c.works else 0.0
    return {"yes": 1.0, "partial": 0.5}.get(c.feature_claim.status, 0.0)


def _edge(ca: Cell, cb: Cell) -> str:
    ha, hb = _has(ca), _has(cb)
    if not ca.feature.ranked:
        return "same approach" if ha == hb else "different designs"
    if ha == hb:
        return "both" if ha == 1 else "neither" if ha == 0 else "both in part"
    return f"advantage {ca.fs if ha > hb else cb.fs}"


def _sentence(c: Cell) -> str:
    s = f"{c.feature_claim.status}, {c.feature_claim.note}" + (f" [{c.feature_claim.ref}]" if c.feature_claim.ref else "")
    if c.probe is not None:
        s += f"; probe: {c.status} ({c.probe.detail})"
    return s + "."
