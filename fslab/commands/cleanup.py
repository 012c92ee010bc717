"""`fslab cleanup`: tear down whatever fslab created and did not remove (after a crash)."""
from __future__ import annotations

import typer

from fslab.system import teardown
from fslab.commands._common import console


def register(app: typer.Typer) -> None:
    app.command("cleanup")(cleanup)


def cleanup() -> None:
    """Unmount, detach, destroy and stop everything fslab left behind (idempotent)."""
    done, failed = teardown.cleanup()
    for d in done:
        console.print(f"removed {d}")
    for f in failed:
        console.print(f"[red]could not remove[/] {f}")
    if not done and not failed:
        console.print("nothing to clean up")
    if failed:
        raise typer.Exit(1)
