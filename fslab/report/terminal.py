"""The Rich verdict table shown after `fslab run` and by `fslab report` without options."""
from __future__ import annotations

import pandas as pd

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fslab.analysis import Analysis
from fslab.report.verdicts import LEGEND
from fslab.metrics.answer import throughput_metrics
from fslab.report.baseline import print_baseline
from fslab.report.tables import (adaptive_rounds, footnotes, memory_checks, memory_unchecked_text,
                                 verdict_table)
from fslab.results.load import load
from fslab.results.load import Loaded
from fslab.store import Store
from fslab.fio.cachepolicy import describe_run
from fslab.report.headline import captures_of, headline, headline_text, with_capture
from fslab.results.provenance import measured_as, measured_where
from fslab.report.options import print_runs as print_options
from fslab.decide.decision import text, verdict_line
from fslab.decide.result import stored_decisions as decisions


# In a terminal, a workload that has these metrics shows only them (the HTML and
# Markdown reports show everything); other suites show all their ranked metrics.
IO_METRICS = throughput_metrics()
HEADLINE = (*IO_METRICS, "read_clat_p99", "write_clat_p99", "cpu_busy_system_wide")


def _metric_name(label: str) -> str:
    return label.split(" [", 1)[0]


def terminal_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Ranked metrics only; for workloads with headline metrics, just those."""
    df = df[df["direction"] != ""]
    names = df["metric_key"]
    # only I/O metrics make a workload fio-like: other suites record system-wide CPU too
    # (e.g. each S3 task) and must keep all their ranked metrics
    has_headline = names.isin(IO_METRICS).groupby(df["workload"]).transform("any")
    return df[~has_headline | names.isin(HEADLINE)]


def verdict_rich(a: Analysis, title: str) -> tuple[Table, list[str], int]:
    """The table, the distinct notes of its '~' rows, and how many rows were left out."""
    full = verdict_table(a)
    df = terminal_rows(full)
    table = Table(title=title, title_justify="left", show_lines=False, pad_edge=False)
    for col in df.columns:
        if col in ("note", "metric_key"):
            continue
        table.add_column(col if col != "direction" else "", overflow="fold",
                         justify="right" if col in a.levels else "left",
                         style="bold green" if col == "best" else None)
    notes: list[str] = []
    last = None
    for row in df.to_dict("records"):
        workload = row["workload"] if row["workload"] != last else ""
        last = row["workload"]
        verdict = escape(row["verdict"])
        if row["note"] and row["verdict"] == "~":
            if row["note"] not in notes:
                notes.append(row["note"])
            verdict += f" [dim]({notes.index(row['note']) + 1})[/dim]"
        cells = [workload, _metric_name(row["metric"]), row["direction"],
                 *(row[lv] for lv in a.levels), row["best"]]
        table.add_row(*map(escape, cells), verdict)
    return table, notes, len(full) - len(df)


def print_analysis(analysis: Analysis, title: str, console: Console, hint_run: str | None = None) -> None:
    """The verdict table, its numbered notes and footnotes, and what was left out."""
    table, notes, hidden = verdict_rich(analysis, escape(title))
    console.print(table)
    for i, note in enumerate(notes, 1):
        console.print(f"[dim]({i}) {escape(note)}[/dim]")
    for note in footnotes(analysis):
        console.print(f"[dim]{escape(note)}[/dim]")
    if hidden:
        where = f"fslab report {hint_run} --html report.html" if hint_run else "the HTML report"
        console.print(f"[dim]{hidden} more rows (latency details, CPU, unranked metrics): "
                      f"{escape(where)}[/dim]")


def print_verdicts(store: Store, run_ids: list[str], console: Console) -> None:
    """Print the verdict table of these runs (compares filesystem variants)."""
    loaded = load(store, run_ids, regression=False)
    ids = ", ".join(r["run_id"] for r in loaded.runs)
    print_answer(loaded, console)
    print_analysis(loaded.analysis, f"fslab verdicts — run {ids}", console, loaded.runs[0]["run_id"])
    print_measurement_notes(loaded, console)


def print_measurement_notes(loaded: Loaded, console: Console) -> None:
    """What the cache policy did on each filesystem, and throughput as % of the raw device."""
    for env in loaded.environments.values():
        for line in describe_run(env):
            # emoji=False: a variant named 'a' made 'tmpfs:a: buffered' a 🅰
            console.print(f"[dim]{escape(line)}[/dim]", emoji=False)
    for run in loaded.runs:
        print_adaptive(run, console, len(loaded.runs) > 1)
    print_baseline(loaded.analysis.data, console)


def print_adaptive(run: dict, console: Console, name_run: bool = False) -> None:
    """Each case's rounds and whether it converged, and the price of stopping on the data."""
    view = adaptive_rounds(run)
    if view is None:
        return
    console.print(escape(view["summary"] + (f" (run {view['run_id']})" if name_run else "")),
                  emoji=False)
    for c in view["cases"]:
        widest = f" (widest CI {c['widest CI']}: {c['where']})" if c["where"] else ""
        console.print(f"  {escape(c['case'])} — {c['rounds']} rounds, "
                      f"{escape(c['converged'])}{escape(widest)}", emoji=False)
    if view["caveat"]:
        console.print(f"[dim]note: {escape(view['caveat'])}[/dim]")


def print_answer(loaded: Loaded, console: Console) -> None:
    """The answer first: which filesystem is best per workload, by how much, how sure,
    whether the device or memory served it; then the failed units left out."""
    print_options(loaded.runs, console)
    lines = headline_text(headline(loaded.analysis, loaded.records,
                                        loaded.environments.values()))
    where = measured_where(loaded.environments)
    if lines:
        how = measured_as(loaded.environments, loaded.records)
        cache = f" ({how})" if how else ""
        console.print(f"[bold]Answer[/] — best first per workload; {escape(LEGEND + cache)}")
        for line in lines:
            console.print(f"  {escape(line)}")
    for dec in decisions(loaded.runs):     # a decide's race: its decision, as decide said it
        console.print(f"[bold]Decision[/] (fslab decide, run {dec.run})")
        env = loaded.environments.get(dec.run)
        for line in with_capture(text(dec), verdict_line(dec), captures_of([env] if env else [])):
            console.print(escape(line), highlight=False)
    unchecked = memory_unchecked_text(memory_checks(loaded.records), loaded.records)
    if unchecked:   # where the answer would flag numbers served from memory
        console.print(f"[yellow]{escape(unchecked)}[/]")
    for line in where:   # which ZFS, which machine: before the reader takes any number home
        console.print(f"[yellow]measured:[/] {escape(line)}")
    for f in loaded.failed_units:
        console.print(f"[red]failed unit, left out of every verdict:[/] {escape(f)}")
