"""A recommendation as a terminal view, Markdown, an HTML fragment, or one line.

What reports call: `first_text(rec)` (one line: who is first, or why no one is),
`rec.paragraph`, `html(rec)`, `markdown(rec)`, `print_rich(rec, console)`; the JSON
shape is `as_json(rec)`. Where the numbers come from (zfs here is zfs-fuse, a guest's
emulator: fslab.results.provenance) is said before any ranking, as `fslab report` says it.
"""
from __future__ import annotations

import math

from markupsafe import escape as html_escape
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fslab import schema
from fslab.analysis.counts import DESIGN
from fslab.analysis.pairwise import format_p
from fslab.recommend.explain import size_text
from fslab.recommend.score import CAPABILITY, COUNTED, MEASURED, CriterionResult, Recommendation
from fslab.results.provenance import measured_where as lines
from fslab.store.environment import environments_of


def first_text(rec: Recommendation) -> str:
    """'btrfs = zfs (100/100)', or why there is no one first."""
    first = rec.first
    if first is None and len(rec.levels) < 2:
        return "no winner: one filesystem only"
    if first is None:
        return "no winner: nothing measured in this run bears on it"
    if len(first) > 1 and len(first) == sum(not math.isnan(r.score) for r in rec.ranking):
        return "no measured difference between " + ", ".join(first)
    score = next(r.score for r in rec.ranking if r.level == first[0])
    return " = ".join(first) + f" ({score:.0f}/100)"


def evidence_lines(c: CriterionResult) -> list[str]:
    """Every point behind a criterion, each naming the records or feature it comes from."""
    if c.not_measured:
        return [c.not_measured]
    if c.status == COUNTED:
        return ["its measurements are already counted under an earlier criterion"]
    lines = []
    for p in c.points:
        if c.status == CAPABILITY:
            src = (f"run {p['records']['run_id']} features:{p['feature']} verified"
                   if p["records"] else f"claim, {p['claim']['ref']}")
            lines.append(f"{p['level']}: {_capability(p['value'])} — {p['basis']}: {p['detail']} [{src}]")
        else:
            ratio = ("" if math.isnan(p["ratio"]) else f" ({size_text(p['ratio'])})") \
                if p.get("design") != DESIGN else f" ({_pct(p['median_winner'])} vs {_pct(p['median_loser'])})"
            also = [m for m in p["records"]["metrics"] if m != p["metric"]]
            same = f"; same measure: {', '.join(also)}" if also else ""
            lines.append(f"{p['winner']} beats {p['loser']} on {p['suite']}:{p['case']} "
                         f"{p['metric']}{ratio}: {format_p(p['p_holm'])}, |Cliff's δ|={p['delta']:.2f} "
                         f"{p['magnitude']}, {p['test']}, n={p['n']}{same} [run {p['records']['run_id']}]")
    if c.ties:
        t = c.strongest_tie
        extra = (f"; largest: {t['winner']} ahead of {t['loser']} on {t['case']} {t['metric']} "
                 f"{format_p(t['p_holm']) if not math.isnan(t['p_holm']) else 'untested'}, "
                 f"|Cliff's δ|={t['delta']:.2f}" + (f" — {t['note']}" if t["note"] else "")) if t else ""
        lines.append(f"{c.ties} comparison(s) without a significant difference: ties{extra}")
    if c.counted_before:
        lines.append(f"{c.counted_before} measure(s) already counted under an earlier criterion")
    if c.missing:
        lines.append(f"no evidence for {', '.join(c.missing)}")
    return lines


def _pct(rate: float) -> str:
    return f"{rate * 100:.3g}%"


def _capability(value: float) -> str:
    return {1.0: "yes", 0.5: "partly", 0.0: "no"}.get(value, f"{value:g}")


def _kind(c: CriterionResult) -> str:
    return {MEASURED: "measured", CAPABILITY: "capability, not scored"}.get(c.status, c.status)


def _cell(c: CriterionResult, level: str) -> str:
    """One criterion x filesystem cell: a score, a stated capability, or a dash."""
    if c.status == MEASURED:
        return f"{c.scores[level]:.2f}" if level in c.scores else "–"
    if c.status == CAPABILITY:
        p = next((p for p in c.points if p["level"] == level), None)
        return "–" if p is None else _capability(p["value"]) + ("" if p["probed"] else " (doc)")
    return "–"


def _rank_label(r) -> str:
    return "–" if math.isnan(r.score) else f"{r.rank}{'=' if r.tied_with else ''}"


def measured_where(rec: Recommendation, store) -> list[str]:
    """The report's 'Measured:' lines for the run this recommendation decides from."""
    return lines(environments_of([store.run(rec.run_id)]))


def as_json(rec: Recommendation, warnings: list[str] = ()) -> dict:
    """rec.as_dict() with `measured_where`: the lines to read before any ranking."""
    return schema.stamp("recommend", {"measured_where": list(warnings), **rec.as_dict()})


def print_rich(rec: Recommendation, console: Console, warnings: list[str] = ()) -> None:
    """The provenance warnings, criteria as rows, filesystems as columns (in rank order),
    then the evidence."""
    for w in warnings:
        console.print(f"[bold yellow]Measured:[/] {escape(w)}")
    t = Table(title=f"fslab recommend — run {rec.run_id}, priorities {rec.priorities.name}: "
                    f"first: {first_text(rec)}", title_justify="left")
    t.add_column("criterion")
    t.add_column("weight", justify="right")
    t.add_column("kind")
    for r in rec.ranking:
        t.add_column(f"{_rank_label(r)}. {r.level}", justify="right")
    for c in rec.criteria:
        t.add_row(escape(c.criterion.label), f"{c.criterion.weight:g}", escape(_kind(c)),
                  *(_cell(c, r.level) for r in rec.ranking))
    t.add_row("[bold]score /100[/] (measured criteria only)", "", "",
              *("–" if math.isnan(r.score) else f"[bold]{r.score:.1f}[/]" for r in rec.ranking))
    console.print(t)
    console.print(escape(rec.paragraph))
    console.print()
    for c in rec.criteria:
        console.print(f"[bold]{escape(c.criterion.label)}[/] (weight {c.criterion.weight:g}, {_kind(c)}"
                      + (f"; {escape(c.criterion.why)}" if c.criterion.why else "") + ")")
        for line in evidence_lines(c):
            console.print(f"  • {escape(line)}")
    if rec.features_run and rec.features_run != rec.run_id:
        console.print(f"[dim]feature probes from run {rec.features_run}[/dim]")


def markdown(rec: Recommendation, warnings: list[str] = ()) -> str:
    out = [f"# Recommendation — priorities: {rec.priorities.name}", "",
           *[f"> **Measured:** {w}\n" for w in warnings],
           f"Run {rec.run_id}. {rec.priorities.description}", "",
           f"**First: {first_text(rec)}**", "", rec.paragraph, "",
           "| rank | filesystem | score | " + " | ".join(
               f"{c.criterion.label} ×{c.criterion.weight:g}"
               + ("" if c.status == MEASURED else f" ({_kind(c)})") for c in rec.criteria) + " |",
           "|---|---|---|" + "---|" * len(rec.criteria)]
    for r in rec.ranking:
        cells = [_cell(c, r.level) for c in rec.criteria]
        out.append(f"| {_rank_label(r)} | {r.level} | "
                   f"{'–' if math.isnan(r.score) else f'{r.score:.1f}'} | " + " | ".join(cells) + " |")
    out += ["", "## Evidence", ""]
    for c in rec.criteria:
        out.append(f"**{c.criterion.label}** (weight {c.criterion.weight:g}, {_kind(c)})")
        out += [f"- {line}" for line in evidence_lines(c)] + [""]
    out.append(_method())
    return "\n".join(out) + "\n"


def html(rec: Recommendation) -> str:
    """An escaped HTML fragment for the report."""
    e = html_escape
    head = "".join(f"<th>{e(c.criterion.label)} ×{c.criterion.weight:g}"
                   + ("" if c.status == MEASURED else f"<br><small>{e(_kind(c))}</small>") + "</th>"
                   for c in rec.criteria)
    rows = []
    for r in rec.ranking:
        cells = "".join(f"<td>{e(_cell(c, r.level))}</td>" for c in rec.criteria)
        score = "–" if math.isnan(r.score) else f"{r.score:.1f}"
        rows.append(f"<tr><td>{_rank_label(r)}</td><td>{e(r.level)}</td>"
                    f"<td>{score}</td>{cells}</tr>")
    evidence = "".join(
        f"<h4>{e(c.criterion.label)} (weight {c.criterion.weight:g}, {e(_kind(c))})</h4><ul>"
        + "".join(f"<li>{e(line)}</li>" for line in evidence_lines(c)) + "</ul>"
        for c in rec.criteria)
    return (f"<p><strong>First: {e(first_text(rec))}</strong></p><p>{e(rec.paragraph)}</p>"
            f"<table><tr><th>rank</th><th>filesystem</th><th>score</th>"
            f"{head}</tr>{''.join(rows)}</table><details><summary>evidence behind every point"
            f"</summary>{evidence}<p>{e(_method())}</p></details>")


def _method() -> str:
    return ("Scores come from measured criteria only, from the Holm-corrected pairwise tests: "
            "on each job's measure (IOPS and bandwidth of a job are one measure) a filesystem "
            "scores as its peer, the best-ranked filesystem no test separates it from: 1 when "
            "that is the best, else the peer's ratio to the best (inverted for lower-is-better "
            "metrics; 0 behind a best of 0), so filesystems that cannot be told apart score "
            "alike and a 0.98x filesystem nearly as much as the best; counts of trials (damaged "
            "blocks), tested pooled over rounds, score 1 minus the difference of the peer's "
            "rate to the best's; a criterion is "
            "the mean over its measures. Total = weighted mean x 100 over the measured "
            "criteria; totals within 0.5 share a rank. Features (documented claims, or probes of "
            "them; '(doc)' = documentation only) are stated capabilities shown with their weight, "
            "never scored. A criterion this run did not measure is listed with the suite that "
            "answers it; with none measured there is no winner.")
