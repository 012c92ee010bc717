"""A recommendation as a terminal view, Markdown, or HTML fragment (the report's first section)."""
from __future__ import annotations

import math

from markupsafe import escape as html_escape
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fslab.analysis.pairwise import format_p
from fslab.recommend.score import CriterionResult, Recommendation


def evidence_lines(c: CriterionResult) -> list[str]:
    """Every point behind a criterion, each naming the records or feature it comes from."""
    if c.status == "absent":
        return [f"no evidence in this run ({c.criterion.where()})"]
    if c.status == "one level":
        return ["only one filesystem measured: nothing to compare"]
    lines = []
    for p in c.points:
        if c.criterion.kind == "feature":
            src = (f"run {p['records']['run_id']} features:{p['feature']} verified"
                   if p["records"] else f"claim, {p['claim']['ref']}")
            lines.append(f"{p['level']}: {p['value']:g} — {p['basis']}: {p['detail']} [{src}]")
        else:
            ratio = "" if math.isnan(p["ratio"]) else f" ({p['ratio']:.3g}x)"
            lines.append(f"{p['winner']} beats {p['loser']} on {p['suite']}:{p['case']} "
                         f"{p['metric']}{ratio}: {format_p(p['p_holm'])}, |δ|={p['delta']:.2f} "
                         f"{p['magnitude']}, {p['test']}, n={p['n']} [run {p['records']['run_id']}]")
    if c.ties:
        t = c.strongest_tie
        extra = (f"; largest: {t['winner']} ahead of {t['loser']} on {t['case']} {t['metric']} "
                 f"{format_p(t['p_holm']) if not math.isnan(t['p_holm']) else 'untested'}, "
                 f"|δ|={t['delta']:.2f}" + (f" — {t['note']}" if t["note"] else "")) if t else ""
        lines.append(f"{c.ties} comparison(s) without a significant difference: ties{extra}")
    if c.missing:
        lines.append(f"no evidence for {', '.join(c.missing)}")
    return lines


def print_rich(rec: Recommendation, console: Console) -> None:
    """Criteria as rows, filesystems as columns (in rank order), then the evidence."""
    t = Table(title=f"fslab recommend — run {rec.run_id}, priorities {rec.priorities.name}",
              title_justify="left")
    t.add_column("criterion")
    t.add_column("weight", justify="right")
    for r in rec.ranking:
        t.add_column(f"{r.rank}{'=' if r.tied_with else ''}. {r.level}", justify="right")
    for c in rec.criteria:
        t.add_row(escape(c.criterion.label), f"{c.criterion.weight:g}",
                  *(f"{c.scores[r.level]:.2f}" if r.level in c.scores else "–" for r in rec.ranking))
    t.add_row("[bold]score /100[/]", "",
              *("–" if math.isnan(r.score) else f"[bold]{r.score:.1f}[/]" for r in rec.ranking))
    console.print(t)
    console.print(escape(rec.paragraph))
    console.print()
    for c in rec.criteria:
        console.print(f"[bold]{escape(c.criterion.label)}[/] (weight {c.criterion.weight:g}"
                      + (f"; {escape(c.criterion.why)}" if c.criterion.why else "") + ")")
        for line in evidence_lines(c):
            console.print(f"  • {escape(line)}")
    if rec.features_run and rec.features_run != rec.run_id:
        console.print(f"[dim]feature probes from run {rec.features_run}[/dim]")


def markdown(rec: Recommendation) -> str:
    out = [f"# Recommendation — priorities: {rec.priorities.name}", "",
           f"Run {rec.run_id}. {rec.priorities.description}", "", rec.paragraph, "",
           "| rank | filesystem | score | " + " | ".join(
               f"{c.criterion.label} ×{c.criterion.weight:g}" for c in rec.criteria) + " |",
           "|---|---|---|" + "---|" * len(rec.criteria)]
    for r in rec.ranking:
        cells = [("–" if r.level not in c.scores else f"{c.scores[r.level]:.2f}") for c in rec.criteria]
        out.append(f"| {r.rank}{'=' if r.tied_with else ''} | {r.level} | "
                   f"{'–' if math.isnan(r.score) else f'{r.score:.1f}'} | " + " | ".join(cells) + " |")
    out += ["", "## Evidence", ""]
    for c in rec.criteria:
        out.append(f"**{c.criterion.label}** (weight {c.criterion.weight:g})")
        out += [f"- {line}" for line in evidence_lines(c)] + [""]
    out.append(_method())
    return "\n".join(out) + "\n"


def html(rec: Recommendation) -> str:
    """An escaped HTML fragment for the report."""
    e = html_escape
    head = "".join(f"<th>{e(c.criterion.label)} ×{c.criterion.weight:g}</th>" for c in rec.criteria)
    rows = []
    for r in rec.ranking:
        cells = "".join(f"<td>{'–' if r.level not in c.scores else f'{c.scores[r.level]:.2f}'}</td>"
                        for c in rec.criteria)
        score = "–" if math.isnan(r.score) else f"{r.score:.1f}"
        rows.append(f"<tr><td>{r.rank}{'=' if r.tied_with else ''}</td><td>{e(r.level)}</td>"
                    f"<td>{score}</td>{cells}</tr>")
    evidence = "".join(
        f"<h4>{e(c.criterion.label)} (weight {c.criterion.weight:g})</h4><ul>"
        + "".join(f"<li>{e(line)}</li>" for line in evidence_lines(c)) + "</ul>"
        for c in rec.criteria)
    return (f"<p>{e(rec.paragraph)}</p><table><tr><th>rank</th><th>filesystem</th><th>score</th>"
            f"{head}</tr>{''.join(rows)}</table><details><summary>evidence behind every point"
            f"</summary>{evidence}<p>{e(_method())}</p></details>")


def _method() -> str:
    return ("Scores: a measured criterion gives each significant pairwise verdict (Holm-corrected, "
            "Cliff's δ) +1 to its winner and -1 to its loser, scaled to 0..1 with 0.5 = no "
            "significant difference; a feature criterion is 1 if it works (probe), 0 if not, the "
            "documented claim (partial = 0.5) when no probe decided. Total = weighted mean x 100 "
            "over the criteria with evidence; totals within 0.5 share a rank.")
