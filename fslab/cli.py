"""The `fslab` command line (Typer). Commands live in fslab/commands/<name>.py.

Each module there defines `register(app)`; this file only discovers them, so a
new command is one new file.
"""
from __future__ import annotations

import importlib
import pkgutil
import sys

import typer
from typer.core import TyperOption

from fslab import __version__
from fslab.errors import FslabError, StepFailed
import fslab.commands as pkg

# Typer 0.29 prints a flag's Python type beside it ("--json  <bool>"), as if it took a value;
# a flag takes none, so its help shows none (every other option keeps its type or metavar)
_display_type = TyperOption.display_type_rich
TyperOption.display_type_rich = lambda self, ctx: None if self.is_flag else _display_type(self, ctx)

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
    for m in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if not m.name.startswith("_"):
            importlib.import_module(f"fslab.commands.{m.name}").register(app)


_register_commands()


def main() -> None:
    try:
        app()
    # StepFailed: a step outside any unit (a lock held too long at start-up)
    except (FslabError, StepFailed) as e:
        print(f"fslab: {e}", file=sys.stderr)
        sys.exit(getattr(e, "code", 1))
