"""fslab's agent on a remote host: `python3 -m fslab.remote.agent --workdir DIR`.

The coordinator starts it over SSH and talks JSON lines on its stdin/stdout:
    -> {"op": "prepare", "args": {...}}       <- {"ok": true, "result": ...}
                                               <- {"ok": false, "error": "..."}
    -> {"op": "ping"}                          (no reply: the coordinator is still there)
Each op is a method of LocalHost. When stdin closes (the run ended, or the SSH
connection dropped) the agent tears down every filesystem it made and stops the fio
server it started, so a lost coordinator leaves nothing mounted on the host. A
connection that goes silent instead (the network between the hosts fails, and sshd
is not configured to notice) is noticed by the pings: the coordinator sends one every
few seconds, and after `--idle-timeout` seconds without any line the agent tears down
the same way.
"""
from __future__ import annotations

import argparse
import json
import queue
import signal
import sys
import threading

from fslab.remote.local import LocalHost

OPS = ("environment", "start_server", "prepare", "release")
PING = "ping"
IDLE_TIMEOUT = 60.0     # seconds without a line from the coordinator: it is gone


def _lines(stream, q: queue.Queue) -> None:
    """Read `stream` in a thread (so silence can time out); None marks its end."""
    try:
        for line in stream:
            q.put(line)
    except (OSError, ValueError):
        pass
    q.put(None)


def serve(host: LocalHost, requests, replies, idle_timeout: float = IDLE_TIMEOUT) -> str:
    """Answer requests until the input ends or falls silent; says which."""
    q: queue.Queue = queue.Queue()
    threading.Thread(target=_lines, args=(requests, q), daemon=True).start()
    while True:
        try:
            line = q.get(timeout=idle_timeout)
        except queue.Empty:
            return f"no word from the coordinator for {idle_timeout:.0f}s"
        if line is None:
            return "input closed"
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if req.get("op") == PING:
                continue
            if req.get("op") not in OPS:
                raise ValueError(f"unknown op {req.get('op')!r}")
            reply = {"ok": True, "result": getattr(host, req["op"])(**req.get("args", {}))}
        except Exception as e:       # the coordinator decides what a failure means
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        try:
            replies.write(json.dumps(reply) + "\n")
            replies.flush()
        except (BrokenPipeError, OSError):   # the connection is gone: tear down
            return "output closed"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="fslab.remote.agent")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--idle-timeout", type=float, default=IDLE_TIMEOUT,
                    help="tear down after this many seconds without a line from the coordinator")
    args = ap.parse_args(argv)
    host = LocalHost(args.workdir)
    for sig in (signal.SIGHUP, signal.SIGTERM):    # a dropped session: tear down, then exit
        signal.signal(sig, signal.default_int_handler)
    # the protocol owns stdout: anything a library prints goes to stderr instead
    replies, sys.stdout = sys.stdout, sys.stderr
    try:
        serve(host, sys.stdin, replies, args.idle_timeout)
    except KeyboardInterrupt:
        pass
    finally:
        for err in host.close():
            try:
                print(f"fslab agent teardown: {err}", file=sys.stderr, flush=True)
            except OSError:        # nobody listens any more (the connection dropped)
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
