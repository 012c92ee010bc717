"""The Rich verdict table shown after `fslab run` and by `fslab report` without options."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fslab.analysis import Analysis
from fslab.report.tables import footnotes, verdict_table


def verdict_rich(a: Analysis, title: str) -> Table:
    df = verdict_table(a)
    table = Table(title=title, title_justify="left", show_lines=False, pad_edge=False)
    for col in df.columns:
        if col == "note":
            continue
        table.add_column(col if col != "direction" else "", overflow="fold",
                         justify="right" if col in a.levels else "left",
                         style="bold green" if col == "best" else None)
    last = None
    for row in df.to_dict("records"):
        workload = row["workload"] if row["workload"] != last else ""
        last = row["workload"]
        verdict = escape(row["verdict"])
        if row["note"] and row["verdict"] == "~":
            verdict += f" [dim]({escape(row['note'])})[/dim]"
        cells = [workload, row["metric"], row["direction"], *(row[lv] for lv in a.levels), row["best"]]
        table.add_row(*map(escape, cells), verdict)
    return table


def print_verdicts(store, run_ids: list[str], console: Console) -> None:
    """Print the verdict table of these runs (compares filesystem variants)."""
    from fslab.report.load import load
    loaded = load(store, run_ids, regression=False)
    ids = ", ".join(r["run_id"] for r in loaded.runs)
    console.print(verdict_rich(loaded.analysis, escape(f"fslab verdicts — run {ids}")))
    for note in footnotes(loaded.analysis):
        console.print(f"[dim]{escape(note)}[/dim]")
