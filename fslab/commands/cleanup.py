"""`fslab cleanup`: tear down whatever fslab created and did not remove (after a crash)."""
from __future__ import annotations

import typer

from fslab.system import teardown
from fslab.commands._common import console


def register(app: typer.Typer) -> None:
    app.command("cleanup")(cleanup)


def cleanup() -> None:
    """Unmount, detach, destroy and stop what fslab processes that are no longer running
    left behind (idempotent). A running fslab's resources are left to it."""
    done, failed = teardown.cleanup(only_dead_owners=True)
    for d in done:
        console.print(f"removed {d}")
    for f in failed:
        console.print(f"[red]could not remove[/] {f}")
    live = teardown.live_owners()
    for pid, n in sorted(live.items()):
        console.print(f"left {n} resource{'s' if n != 1 else ''} of fslab process {pid}, "
                      "still running (it tears them down when it ends)")
    if not done and not failed and not live:
        console.print("nothing to clean up")
    if failed:
        raise typer.Exit(1)
