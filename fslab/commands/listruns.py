"""`fslab list`: the runs in a results store."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import orjson
import typer
from rich.table import Table

from fslab.errors import FslabError
from fslab.commands._common import JsonOpt, ResultsOpt, console, results_dir
from fslab.store import open_store
from fslab.store.db import Store


def register(app: typer.Typer) -> None:
    app.command("list")(list_runs)


def list_runs(results: Optional[Path] = ResultsOpt, json: bool = JsonOpt) -> None:
    """List the runs in the results store."""
    root = results_dir(results)
    if root.exists() and not root.is_dir():   # a mistyped path, not an empty results directory
        raise FslabError(f"--results {root} is not a directory", code=2)
    if not (root / "fslab.sqlite").is_file():   # listing creates nothing
        if json:
            _print_json([])
        else:
            console.print(f"no runs: no results store in {root}", markup=False, highlight=False)
        return
    store: Store = open_store(root)
    runs = store.runs()
    if json:
        _print_json(runs)
        return
    if not runs:
        console.print(f"no runs in {store.path}")
        return
    t = Table(title=str(store.path), title_justify="left")
    for c in ("run", "status", "started", "profile", "filesystems", "suites", "units done",
              "failed", "records"):
        t.add_column(c)
    for r in runs:
        t.add_row(r["run_id"], r["status"], time.strftime("%Y-%m-%d %H:%M", time.localtime(r["started"])),
                  r["profile"] or "-", r["fs"] or "-", r["suites"] or "-", str(r["done"]),
                  str(r["failed"]), str(r["records"]))
    console.print(t)


def _print_json(runs: list[dict]) -> None:
    from fslab import schema
    print(orjson.dumps(schema.stamp("list", {"runs": runs}), option=orjson.OPT_INDENT_2).decode())
