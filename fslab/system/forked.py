"""Work handed to a forked child process, collected later: the second core's share.

The analysis of a large run is CPU-bound Python and numpy; on a machine with two or
more cores a forked child takes part of it. The child inherits everything by fork (no
copying or pickling of the data) and sends back only its result. If the child fails
for any reason, or has not answered within COLLECT_S, collecting does the work in this
process instead: the same function on the same arguments gives the same result, and a
real error surfaces here.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
from typing import Any, Callable


# The whole parallelism policy: for each kind of work, the smallest input for which a
# second process pays for its fork (below it, one process finishes sooner), and how much
# input one worker of a pool gets. Callers name their work; no thresholds live elsewhere.
MIN_SIZE = {
    "analysis": 20_000,      # records analysed: pairwise tests and regression fits
    "store read": 50_000,    # rows read from the store into one frame
    "fio import": 500,       # fio JSON files parsed by `fslab import`
}
PER_WORKER = {"fio import": 250}    # files per task of the import's process pool
# How long collecting waits for a child's answer before doing the work itself: the child
# started with the parent's other half, so a healthy one has answered long before
COLLECT_S = 600


def worth_it(work: str, size: int) -> bool:
    """Fork for this work only for big inputs, with a second core, where fork exists."""
    return (size >= MIN_SIZE[work] and (os.cpu_count() or 1) >= 2
            and "fork" in multiprocessing.get_all_start_methods())


def workers(work: str, size: int) -> int:
    """Processes for a pool doing this work on size items: one per PER_WORKER share, at
    most one per core; 1 when forking is not worth it (do it in this process)."""
    if not worth_it(work, size):
        return 1
    return max(1, min(os.cpu_count() or 1, -(-size // PER_WORKER[work])))


def chunks(work: str, items: list) -> list[list]:
    """items cut into the PER_WORKER shares the pool's workers take, in order."""
    step = PER_WORKER[work]
    return [items[i:i + step] for i in range(0, len(items), step)]


def start(fn: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    """Run fn(*args) in a forked child now; the returned function waits for its result."""
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(send, fn, args), daemon=True)
    child.start()
    send.close()

    def collect() -> Any:
        ok, value = False, None
        try:
            # a child that hangs (a lock another thread held at fork) is given up on
            if receive.poll(COLLECT_S):
                ok, value = receive.recv()
        except (EOFError, OSError):      # the child died before answering
            pass
        finally:
            receive.close()
            if not ok:
                child.kill()
            child.join(timeout=5)
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
