"""Options shared by commands, so their help text and defaults stay identical."""
from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

ResultsOpt = typer.Option(None, "--results", "-r",
                          help="Results directory (default: $FSLAB_RESULTS or ./fslab-results).",
                          show_default=False)
JsonOpt = typer.Option(False, "--json", help="Print machine-readable JSON instead of a table.")

console = Console()
err = Console(stderr=True)


def results_dir(results: Path | None) -> Path:
    import os
    return Path(results or os.environ.get("FSLAB_RESULTS") or "fslab-results")
