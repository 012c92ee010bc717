"""A host-wide exclusive lock with a deadline: nothing in fslab waits forever, not even for
another fslab process that hangs while it holds a lock."""
from __future__ import annotations

import fcntl
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from fslab.errors import TimedOut

POLL_S = 0.1


@contextmanager
def exclusive(path: Path, seconds: float, what: str) -> Iterator[None]:
    """Hold `path`'s flock; TimedOut (a failed step) naming `what` when another holder
    keeps it past `seconds`."""
    with open(path, "a+") as f:
        deadline = time.monotonic() + seconds
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimedOut(f"{what}: another fslab process held {path} for "
                                       f"more than {seconds:g} s") from None
                time.sleep(POLL_S)
        yield
