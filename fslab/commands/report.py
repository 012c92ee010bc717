"""`fslab report [RUN_ID ...]`: verdicts in the terminal, or HTML/Markdown/CSV/Parquet/JSON."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from fslab.commands._common import ResultsOpt, console, existing_store, input_errors, writing
from fslab.errors import FslabError

# fslab modules are imported inside the commands: cli imports every command module at
# start-up, so what a command runs loads only when it runs (`fslab --help` stays fast)


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(run_ids: Optional[List[str]] = typer.Argument(None, help="Runs to report (default: the latest)."),
               html: Optional[Path] = typer.Option(None, "--html", help="Write the offline HTML report here."),
               markdown: Optional[Path] = typer.Option(None, "--markdown", help="Write a Markdown summary here."),
               csv: Optional[Path] = typer.Option(None, "--csv", help="Write one CSV per table into this folder."),
               parquet: Optional[Path] = typer.Option(None, "--parquet", help="Write all records as Parquet."),
               json_out: Optional[Path] = typer.Option(None, "--json", help="Write the answer as JSON: verdicts (tiers, ratio to best with CI), headline, failed units, claims, and every record."),
               priorities: Optional[List[str]] = typer.Option(
                   None, "--priorities", "-p",
                   help="The HTML's recommendation for these priorities (repeatable): a built-in "
                        "profile (fslab recommend --help lists them) or a TOML file; default: the "
                        "built-in profile the run measured the most of."),
               factor: str = typer.Option("fs+variant", "--factor",
                                          help="What to compare: fs+variant, host or run_id."),
               results: Path = ResultsOpt) -> None:
        """Compare filesystems with honest statistics; without output options, print the verdicts."""
        from fslab.report import export
        from fslab.analysis.groups import normalize_factor
        from fslab.results.load import load, resolve_run_ids
        from fslab.report.terminal import print_analysis, print_answer
        store = existing_store(results)
        with input_errors():
            run_ids = resolve_run_ids(store, run_ids)
        try:
            normalize_factor(factor)
        except ValueError as e:
            raise FslabError(f"--{e}", code=2) from None
        wants_files = any(x is not None for x in (html, markdown, csv, parquet, json_out))
        loaded = load(store, run_ids, factor=factor, regression=html is not None or csv is not None)
        if not wants_files:
            print_answer(loaded, console)
            print_analysis(loaded.analysis, "fslab verdicts — run "
                           + ", ".join(r["run_id"] for r in loaded.runs), console,
                           loaded.runs[0]["run_id"])
            from fslab.report.terminal import print_measurement_notes
            print_measurement_notes(loaded, console)
            from fslab.report.claims import claims_json, print_claims
            print_claims(claims_json(loaded.runs[0], loaded.records), console)
            from fslab.report.hosts import print_host_comparison   # runs on several hosts
            print_host_comparison(loaded.records, console)
            return
        written = []
        if html is not None:
            from fslab.report.html import render_html
            if priorities:
                from fslab.recommend import load as load_priorities
                with input_errors():
                    for p in priorities:     # refused before anything is written
                        load_priorities(p)
            with writing(html):
                render_html(loaded, html, store.root, priorities=priorities)
            written.append(str(html))
        if markdown is not None:
            with writing(markdown):
                markdown.parent.mkdir(parents=True, exist_ok=True)
                markdown.write_text(export.markdown(loaded))
            written.append(str(markdown))
        if csv is not None:
            with writing(csv):
                written += [str(p) for p in export.write_csv(loaded, csv)]
        if parquet is not None:
            with writing(parquet):
                export.write_parquet(loaded, parquet)
            written.append(str(parquet))
        if json_out is not None:
            with writing(json_out):
                export.write_json(loaded, json_out)
            written.append(str(json_out))
        for w in written:
            console.print(f"wrote {w}", markup=False, highlight=False)
