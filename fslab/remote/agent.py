"""fslab's agent on a remote host: `python3 -m fslab.remote.agent --workdir DIR`.

The coordinator starts it over SSH and talks JSON lines on its stdin/stdout:
    -> {"op": "prepare", "args": {...}}       <- {"ok": true, "result": ...}
                                               <- {"ok": false, "error": "..."}
Each op is a method of LocalHost. When stdin closes (the run ended, or the SSH
connection dropped) the agent tears down every filesystem it made and stops the fio
server it started, so a lost coordinator leaves nothing mounted on the host.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys

from fslab.remote.local import LocalHost

OPS = ("environment", "start_server", "prepare", "release")


def serve(host: LocalHost, requests, replies) -> None:
    for line in requests:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if req.get("op") not in OPS:
                raise ValueError(f"unknown op {req.get('op')!r}")
            reply = {"ok": True, "result": getattr(host, req["op"])(**req.get("args", {}))}
        except Exception as e:       # the coordinator decides what a failure means
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="fslab.remote.agent")
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args(argv)
    host = LocalHost(args.workdir)
    for sig in (signal.SIGHUP, signal.SIGTERM):    # a dropped session: tear down, then exit
        signal.signal(sig, signal.default_int_handler)
    # the protocol owns stdout: anything a library prints goes to stderr instead
    replies, sys.stdout = sys.stdout, sys.stderr
    try:
        serve(host, sys.stdin, replies)
    except KeyboardInterrupt:
        pass
    finally:
        for err in host.close():
            print(f"fslab agent teardown: {err}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
