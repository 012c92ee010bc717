"""`fslab recommend RUN_ID`: rank the filesystems of a run for the user's priorities."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import orjson
import typer

from fslab.commands._common import ResultsOpt, console, existing_store, input_errors

# fslab modules are imported inside the commands: cli imports every command module at
# start-up, so what a command runs loads only when it runs (`fslab --help` stays fast)


def register(app: typer.Typer) -> None:
    app.command("recommend")(recommend)


def recommend(
    run_id: Optional[str] = typer.Argument(None, help="Run to decide from (default: the latest)."),
    priorities: str = typer.Option("resource-constrained", "--priorities", "-p", help=(
        "resource-constrained | random-io | sequential-throughput | file-server | data-integrity | "
        "small-files, or a TOML file of weighted criteria (see docs/recommend.md).")),
    json: bool = typer.Option(False, "--json", help=(
        "Print JSON: measured_where (what the numbers are from, e.g. zfs-fuse), priorities, "
        "first (null when nothing measured decides), ranking, not_measured, capabilities and "
        "every criterion's evidence (see README).")),
    markdown: bool = typer.Option(False, "--markdown", help="Print Markdown."),
    results: Optional[Path] = ResultsOpt,
) -> None:
    """Rank the run's filesystems for your priorities from what the run measured.

    Features (documented or probed) are shown as capabilities with their weight, never
    scored; criteria the run did not measure are listed with the suite that answers them.
    Every point cites its verdict or feature."""
    from fslab.recommend import load, recommend_run
    from fslab.recommend.render import as_json, markdown as md, measured_where, print_rich
    with input_errors():
        wanted = load(priorities)
    store = existing_store(results)
    with input_errors():
        run_id = store.run(run_id or store.latest_run_id())["run_id"]
    rec = recommend_run(store, run_id, wanted)
    warnings = measured_where(rec, store)   # zfs-fuse is not kernel ZFS, as the report says
    if json:
        print(orjson.dumps(as_json(rec, warnings),
                           option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY,
                           default=str).decode())
    elif markdown:
        print(md(rec, warnings))
    else:
        print_rich(rec, console, warnings)
