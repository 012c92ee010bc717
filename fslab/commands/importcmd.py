"""`fslab import PATH`: fio JSON produced elsewhere becomes a run of its own."""
from __future__ import annotations

from pathlib import Path

import typer

from fslab.commands._common import JsonOpt, ResultsOpt, console, err
from fslab.errors import FslabError
from fslab.store.db import open_store

# fslab modules are imported inside the commands: cli imports every command module at
# start-up, so what a command runs loads only when it runs (`fslab --help` stays fast)


def register(app: typer.Typer) -> None:
    @app.command("import")
    def import_(path: Path = typer.Argument(..., help="A fio JSON file, or a folder of them "
                                            "(e.g. <fs>/fio_results/<iteration>/<job>-result.json)."),
                results: Path = ResultsOpt, as_json: bool = JsonOpt) -> None:
        """Ingest foreign fio JSON (a file or a tree), tagged by path parts.

        The first folder below PATH names the filesystem, an all-digit folder the
        round; the fio job name is the case. Files that cannot be read are
        listed and skipped; everything else imports.
        """
        import orjson
        from fslab.fio.importer import import_path
        if not path.exists():
            raise FslabError(f"{path}: no such file or directory", code=2)
        store = open_store(results)
        res = import_path(store, path, log=lambda line: err.print(line, markup=False, highlight=False,
                                                                   soft_wrap=True))
        if as_json:
            from fslab import schema
            print(orjson.dumps(schema.stamp("import", {
                "run_id": res.run_id, "files": res.files, "records": res.records,
                "skipped": [{"path": p, "reason": r} for p, r in res.skipped]})).decode())
            raise typer.Exit(0 if res.files else 2)
        console.print(f"run {res.run_id}: imported {res.files} file(s), {res.records} records"
                      + (f"; skipped {len(res.skipped)}" if res.skipped else ""), markup=False)
        if not res.files:   # nothing importable is a mistaken input, like a bad flag
            raise typer.Exit(2)
        if res.records:
            from fslab.report.terminal import print_verdicts
            print_verdicts(store, [res.run_id], console)
            console.print(f"full report: fslab report {res.run_id} --results {store.root} "
                          "--html report.html", markup=False)
