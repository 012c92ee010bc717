"""`fslab capture`: record a command's file I/O in a directory as a replay file."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Optional

import typer

from fslab.errors import FslabError

# fslab modules are imported inside the commands: cli imports every command module at
# start-up, so what a command runs loads only when it runs (`fslab --help` stays fast)


def register(app: typer.Typer) -> None:
    app.command("capture", options_metavar="[OPTIONS] -- COMMAND...",
                context_settings={"allow_extra_args": True,
                                  "ignore_unknown_options": True})(capture)


def capture(
    ctx: typer.Context,
    out: Path = typer.Option(..., "--out", help="The replay file to write (e.g. W.replay)."),
    directory: Optional[Path] = typer.Option(None, "--dir", help="Run the command in this "
                                             "directory and record its file I/O there (default: "
                                             "a scratch directory, removed afterwards)."),
    timeout: float = typer.Option(3600, "--timeout", help="Seconds the command may take."),
) -> None:
    """Run COMMAND under strace and write its file I/O (paths relative to the directory,
    sizes and offsets, never the bytes) as a replay file: fslab capture --out W.replay
    --dir DIR -- COMMAND...  Replay it with fslab run --replay W.replay."""
    from fslab.capture.format import SYNC_KINDS
    from fslab.capture.record import capture as run_capture
    command = list(ctx.args)
    if directory is not None and not directory.is_dir():
        raise FslabError(f"--dir {directory}: not a directory")
    scratch = None if directory is not None else Path(tempfile.mkdtemp(prefix="fslab-capture-dir-"))
    try:
        got = run_capture(command, directory or scratch, timeout)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    r = got.replay
    r.write(out)
    reads, writes = r.data_bytes()
    counts = ", ".join(f"{k} {n}" for k, n in sorted(r.counts().items(), key=lambda kv: -kv[1]))
    io, others = r.thread_counts()
    print(f"{out}: {len(r.ops)} operations in {r.duration:.3f} s, {io} thread(s) doing I/O "
          f"here" + (f" ({others} more only start or wait for others)" if others else "")
          + f": {counts}")
    print(f"  {reads} bytes read, {writes} bytes written; initial state "
          f"{sum(e.kind == 'file' for e in r.init)} files "
          f"({sum(e.size for e in r.init)} bytes), {sum(e.kind == 'dir' for e in r.init)} dirs")
    syncs = sum(n for k, n in r.counts().items() if k in SYNC_KINDS)
    for line in r.account.lines(reads + writes, syncs):
        print(f"  {line}")
    if got.unparsed_lines:
        print(f"  {got.unparsed_lines} strace lines not understood (left out)")
