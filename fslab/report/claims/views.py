"""The claims in the terminal, Markdown and HTML: one line per claim, grouped by study, and
once what "holds" means."""
from __future__ import annotations

from rich.console import Console

HOLDS_MEANS = ('"holds" means the direction (and, for "about N×", the size band) replicated '
               "here; the paper's single run cannot be modelled, so its own numbers are not "
               "tested as such.")

COLOUR = {"holds": "green", "direction holds, size differs": "yellow",
          "direction holds, size not shown": "yellow", "reversed": "red",
          "does not reproduce": "red", "no significant difference": "yellow",
          "undecided": "yellow", "not comparable": "dim", "not measured": "dim"}


def print_claims(rows: list[dict], console: Console) -> None:
    """The terminal section, one line per claim, grouped by study."""
    from rich.markup import escape
    if not rows:
        return
    study = None
    width = max(len(r["verdict"]) for r in rows)
    for r in rows:
        if r["study"] != study:
            if study is None:
                console.print(f"\n[dim]{escape(HOLDS_MEANS)}[/dim]")
            study = r["study"]
            console.print(f"\n[bold]The study said → here ({study})[/]")
        console.print(f"  [{COLOUR.get(r['verdict'], 'white')}]{r['verdict']:>{width}}[/]  "
                      f"{escape(r['claim'])}")
        console.print(f"  {'':>{width}}  [dim]study: {escape(r['published'])} · here: "
                      f"{escape(r['measured'])} · {escape(r['why'])}[/dim]")


def markdown(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    lines = ["## The study said → here", "", HOLDS_MEANS, "",
             "| study | claim | published | measured here | verdict | why |",
             "|---|---|---|---|---|---|"]

    def cell(t: str) -> str:
        return str(t).replace("|", "\\|")
    lines += [f"| {r['study']} | {cell(r['claim'])} | {cell(r['published'])} | {cell(r['measured'])} "
              f"| **{r['verdict']}** | {cell(r['why'])} |" for r in rows]
    return lines + [""]


def html_rows(rows: list[dict]) -> dict | None:
    """The HTML section's data (the template escapes every value)."""
    if not rows:
        return None
    css = {"green": "v-good", "red": "v-bad", "yellow": "v-warn", "dim": "v-muted"}
    return {"means": HOLDS_MEANS,
            "rows": [{**r, "css": css.get(COLOUR.get(r["verdict"], ""), "")} for r in rows]}
