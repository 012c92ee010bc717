"""The `fslab` command line (Typer). Commands live in fslab/commands/<name>.py.

Each module there defines `register(app)`; this file only discovers them, so a
new command is one new file.
"""
from __future__ import annotations

import importlib
import pkgutil
import sys

import typer

from fslab import __version__
from fslab.errors import FslabError

app = typer.Typer(
    name="fslab",
    help="Which Linux filesystem, with which options, is best for my workload on my hardware? "
         "fslab provisions real filesystems, runs workloads, stores every result and compares "
         "them with honest statistics.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        print(f"fslab {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    pass


def _register_commands() -> None:
    import fslab.commands as pkg
    for m in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if not m.name.startswith("_"):
            importlib.import_module(f"fslab.commands.{m.name}").register(app)


_register_commands()


def main() -> None:
    try:
        app()
    except FslabError as e:
        print(f"fslab: {e}", file=sys.stderr)
        sys.exit(e.code)
