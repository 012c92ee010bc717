"""`fslab compare RUN_A RUN_B`: the same cases in two runs (two hosts, or before/after)."""
from __future__ import annotations

from pathlib import Path

import typer

from fslab.commands._common import JsonOpt, ResultsOpt, console


def register(app: typer.Typer) -> None:
    @app.command("compare")
    def compare(run_a: str = typer.Argument(..., help="The baseline run."),
                run_b: str = typer.Argument(..., help="The run compared with it."),
                results: Path = ResultsOpt, as_json: bool = JsonOpt) -> None:
        """benchstat-like table: each case and metric of RUN_B against RUN_A.

        Values of different runs are independent, so pairs are tested with Mann-Whitney U
        (Holm-corrected per metric); each filesystem variant is compared with itself.
        """
        from fslab.errors import FslabError
        from fslab.report.load import load
        from fslab.report.tables import pairs_table
        from fslab.report.terminal import print_analysis
        from fslab.store.db import open_store
        store = open_store(results)
        a_id, b_id = store.run(run_a)["run_id"], store.run(run_b)["run_id"]
        if a_id == b_id:
            raise FslabError("compare needs two different runs")
        hosts_a, hosts_b = _hosts(store, a_id), _hosts(store, b_id)
        if len(hosts_a) == len(hosts_b) == 1 and hosts_a != hosts_b:
            # the same plan on two hosts, one run each: the hosts are what differs
            # (grouped by host, the runs would share no case at all)
            (host_a,), (host_b,) = hosts_a, hosts_b
            loaded = load(store, [a_id, b_id], factor="host", order=[host_a, host_b],
                          regression=False)
            title = f"fslab compare — {host_b} ({b_id}) vs {host_a} ({a_id})"
        else:
            loaded = load(store, [a_id, b_id], factor="run_id", order=[a_id, b_id],
                          regression=False)
            title = f"fslab compare — {b_id} vs {a_id}"
        if as_json:
            pairs = pairs_table(loaded.analysis)
            print(pairs.to_json(orient="records"))
            return
        common = loaded.analysis.pairs
        if common.empty:
            raise FslabError(f"runs {a_id} and {b_id} share no ranked case and metric to compare")
        from fslab.report.options import print_runs as print_options   # what each run asked
        print_options(loaded.runs, console)
        print_analysis(loaded.analysis, title, console)


def _hosts(store, run_id: str) -> set[str]:
    """The hosts a run measured on (fio's "all" sum of a parallel run is none of them)."""
    return {u["host"] for u in store.units(run_id)} - {"all"}
