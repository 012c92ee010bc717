"""Work handed to a forked child process, collected later: the second core's share.

The analysis of a large run is CPU-bound Python and numpy; on a machine with two or
more cores a forked child takes part of it. The child inherits everything by fork (no
copying or pickling of the data) and sends back only its result. If the child fails
for any reason, collecting does the work in this process instead: the same function
on the same arguments gives the same result, and a real error surfaces here.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
from typing import Any, Callable


def worth_it(size: int, threshold: int) -> bool:
    """Fork only for big inputs, with a second core, where fork exists."""
    return (size >= threshold and (os.cpu_count() or 1) >= 2
            and "fork" in multiprocessing.get_all_start_methods())


def start(fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    """Run fn(*args) in a forked child now; the returned function waits for its result."""
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(send, fn, args), daemon=True)
    child.start()
    send.close()

    def collect() -> Any:
        try:
            ok, value = receive.recv()
        except (EOFError, OSError):      # the child died before answering
            ok, value = False, None
        finally:
            receive.close()
            child.join()
        return value if ok else fn(*args)
    return collect


def now(fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    """The same interface, run lazily in this process (small inputs, one core)."""
    return lambda: fn(*args)


def _child(send, fn, args) -> None:
    # Ctrl-C reaches the whole process group: the child just stops, the parent handles it
    # (a handler inherited from `fslab run` must not tear anything down from here)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        result = (True, fn(*args))
    except BaseException:
        result = (False, None)
    try:
        send.send(result)
    finally:
        send.close()
