"""Options shared by commands, so their help text and defaults stay identical."""
from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from fslab.errors import FslabError
from fslab.store import open_store

# fslab modules are imported inside the commands: cli imports every command module at
# start-up, so what a command runs loads only when it runs (`fslab --help` stays fast)

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


# emoji off: Rich turns ":x:" in a label (a variant named "a:x:b") into an emoji; every
# label fslab prints is printed as the user wrote it
console = Console(width=_piped_width("stdout"), emoji=False)
err = Console(stderr=True, width=_piped_width("stderr"), emoji=False)


def results_dir(results: Path | None) -> Path:
    import os
    return Path(results or os.environ.get("FSLAB_RESULTS") or "fslab-results")


def input_errors():
    """A context in which an FslabError is the user's mistake (a run id, a --priorities
    name, a path): exit 2 like every other input error, not 1."""
    from fslab.run.validate import as_input_errors
    return as_input_errors()


def writing(path: Path):
    """A context for writing an output file the user named: a path that cannot be written
    is one line and exit 2, not a traceback."""
    from contextlib import contextmanager

    @contextmanager
    def guard():
        try:
            yield
        except OSError as e:
            raise FslabError(f"cannot write {path}: {e.strerror or e}", code=2) from None
    return guard()


def existing_store(results: Path | None):
    """The results store a command reads; reading never creates one: where there is none,
    an input error (exit 2) that says where fslab looked."""
    root = results_dir(results)
    if not (root / "fslab.sqlite").is_file():
        raise FslabError(f"no results store in {root} (fslab run writes one there; "
                         "--results DIR or $FSLAB_RESULTS names another)", code=2)
    return open_store(root)
