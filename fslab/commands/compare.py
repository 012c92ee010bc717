"""`fslab compare RUN_A RUN_B`: the same cases in two runs (two hosts, or before/after)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from fslab.commands._common import (JsonOpt, ResultsOpt, console, err, existing_store,
                                    input_errors, writing)

# fslab modules are imported inside the commands: cli imports every command module at
# start-up, so what a command runs loads only when it runs (`fslab --help` stays fast)


def register(app: typer.Typer) -> None:
    @app.command("compare")
    def compare(run_a: str = typer.Argument(..., help="The baseline run: RUN (a prefix will do), "
                                            "RUN@RESULTS_DIR for a run of another store, or "
                                            "@RESULTS_DIR for that store's latest run."),
                run_b: str = typer.Argument(..., help="The run compared with it (same forms)."),
                fail_if_slower: Optional[str] = typer.Option(
                    None, "--fail-if-slower", metavar="PCT",
                    help="Exit 1 when RUN_B is slower: an answer metric (what the answer ranks a "
                    "workload by, e.g. random read IOPS and p99 read latency) significantly worse "
                    "(exact Mann-Whitney, Holm over the answer metrics, α = 0.05) by more than "
                    "PCT (e.g. 5%). Exit 2 when the runs have too few rounds for it to ever fail."),
                html: Optional[Path] = typer.Option(None, "--html", help="Also write the "
                                                    "comparison as a self-contained HTML page."),
                results: Optional[Path] = ResultsOpt, as_json: bool = JsonOpt) -> None:
        """benchstat-like table of RUN_B against RUN_A: per metric the change in % with its
        95% interval and p-value, and hyperfine's "1.32 ± 0.05× faster".

        Each filesystem variant and case is compared with itself across the two runs. Values
        of different runs are independent samples: exact Mann-Whitney U, the Hodges-Lehmann
        ratio and the interval from inverting the test (docs/statistics.md). Warns when the
        runs differ in more than that (kernel, fio and mkfs versions, options, plan) or a host
        was busy. Two runs on one host each, different hosts, compare the hosts.
        """
        from fslab.report import compare as cmp
        threshold = cmp.parse_threshold(fail_if_slower) if fail_if_slower is not None else None
        a, b = open_side(run_a, results), open_side(run_b, results)
        c = cmp.compare_runs(a, b)
        notes = cmp.notes_for(c)
        verdict = cmp.gate(c.rows, threshold) if threshold is not None else None
        if as_json:
            _print_json(c, verdict)
            for note in notes:
                err.print(f"note: {note}", markup=False, highlight=False)
        else:
            _print_terminal(c, notes, verdict)
        if html is not None:
            from fslab.report.compare_html import render
            with writing(html):
                render(c, notes, verdict, html)
            (err if as_json else console).print(f"wrote {html}", markup=False, highlight=False)
        if verdict is not None:
            (err if as_json else console).print(verdict.text, markup=False, highlight=False,
                                                soft_wrap=True)   # one line for CI logs to grep
            if verdict.failed:
                raise typer.Exit(cmp.SLOWER)


def open_side(text: str, default_results: Path | None):
    """The run a command-line word names (RUN, RUN@DIR, @DIR); every mistake in it is an
    input error (exit 2)."""
    from fslab.report.compare import Side, parse_ref
    run_text, where = parse_ref(text)
    store = existing_store(Path(where) if where else default_results)
    with input_errors():
        return Side(store, store.run(run_text or store.latest_run_id()))


def _title(c) -> str:
    if c.by_host:
        return (f"fslab compare — {c.b.label} ({c.b.run['run_id']}) vs "
                f"{c.a.label} ({c.a.run['run_id']})")
    return f"fslab compare — {c.b.label} vs {c.a.label} (baseline)"


def _print_terminal(c, notes: list[str], verdict) -> None:
    from rich.markup import escape
    from rich.table import Table
    from fslab.report import compare as cmp
    from fslab.report.options import print_runs as print_options   # what each run asked
    print_options([{**c.a.run, "run_id": c.a.label}, {**c.b.run, "run_id": c.b.label}], console)
    for note in notes:
        console.print(f"[yellow]note:[/] {escape(note)}", emoji=False)
    shown = cmp.shown_rows(c.rows)
    la, lb = c.a.label, c.b.label
    table = Table(title=escape(_title(c)), title_justify="left", pad_edge=False)
    cells = [cmp.table_cells(r, la, lb) for r in shown.to_dict("records")]
    columns = [k for k in cmp.table_cells(shown.iloc[0].to_dict(), la, lb) if k != "note"]
    for col in columns:
        table.add_column(escape(col), overflow="fold",
                         justify="right" if col in (la, lb, "p") else "left")
    if verdict is not None:
        table.add_column("gate", no_wrap=True)
    pair_notes: list[str] = []
    last = None
    for index, cell in zip(shown.index, cells):
        row = [cell[col] for col in columns]
        if cell["workload"] == last:
            row[0] = ""
        last = cell["workload"]
        if cell["note"] and row[-1] == "~":
            if cell["note"] not in pair_notes:
                pair_notes.append(cell["note"])
            row[-1] = f"~ ({pair_notes.index(cell['note']) + 1})"
        if verdict is not None:
            row.append(verdict.cell(index))
        table.add_row(*map(escape, row))
    console.print(table)
    for i, note in enumerate(pair_notes, 1):
        console.print(f"[dim]({i}) {escape(note)}[/dim]")
    for note in cmp.footnotes(shown) + ([cmp.GATE_NOTE] if verdict is not None else []):
        console.print(f"[dim]{escape(note)}[/dim]")
    hidden = len(c.rows) - len(shown)
    if hidden:
        console.print(f"[dim]{hidden} more ranked metrics (latency details and others): "
                      "--json or --html[/dim]")


def _print_json(c, verdict) -> None:
    """"rows": one object per compared (workload, metric): the pair's numbers (as the
    analysis has them), the change's interval in %, the factor text, and the gate's verdict."""
    import math
    import orjson
    rows = c.rows.drop(columns=["answer_rank", "speed"], errors="ignore").copy()
    rows["gate"] = None
    if verdict is not None:
        slower = set(verdict.slower.index)
        rows.loc[rows["answer"], "gate"] = ["slower" if i in slower else "ok"
                                            for i in rows.index[rows["answer"]]]
        rows["p_gate"] = [verdict.p_gate.get(i, math.nan) for i in rows.index]
    records = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
               for r in rows.to_dict("records")]
    from fslab import schema
    print(orjson.dumps(schema.stamp("compare", {"rows": records}),
                       option=orjson.OPT_SERIALIZE_NUMPY, default=str).decode())
