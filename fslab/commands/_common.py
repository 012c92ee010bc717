"""Options shared by commands, so their help text and defaults stay identical."""
from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

ResultsOpt = typer.Option(None, "--results", "-r",
                          help="Results directory (default: $FSLAB_RESULTS or ./fslab-results).",
                          show_default=False)
JsonOpt = typer.Option(False, "--json", help="Print machine-readable JSON instead of a table.")


def _piped_width(stream) -> int | None:
    """Rich wraps at 80 columns when output is not a terminal (a log, a file, a pipe):
    the verdict table then breaks every cell. Use a wide line there unless COLUMNS says."""
    import os
    import sys
    interactive = getattr(sys, stream).isatty()
    return None if interactive or os.environ.get("COLUMNS") else 160


console = Console(width=_piped_width("stdout"))
err = Console(stderr=True, width=_piped_width("stderr"))


def results_dir(results: Path | None) -> Path:
    import os
    return Path(results or os.environ.get("FSLAB_RESULTS") or "fslab-results")


def existing_store(results: Path | None):
    """The results store a command reads; reading never creates one: where there is none,
    an input error (exit 2) that says where fslab looked."""
    from fslab.errors import FslabError
    from fslab.store import open_store
    root = results_dir(results)
    if not (root / "fslab.sqlite").is_file():
        raise FslabError(f"no results store in {root} (fslab run writes one there; "
                         "--results DIR or $FSLAB_RESULTS names another)", code=2)
    return open_store(root)
