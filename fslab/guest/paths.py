"""Where the guest's build cache lives and which Debian mirror it downloads from."""
from __future__ import annotations

import os
import re
from pathlib import Path

def cache_root() -> Path:
    env = os.environ.get("FSLAB_CACHE")
    if env:
        return Path(env) / "guest"
    if os.geteuid() == 0:
        return Path("/var/cache/fslab/guest")
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fslab" / "guest"


def debian_mirror() -> str:
    env = os.environ.get("FSLAB_DEBIAN_MIRROR")
    if env:
        return env
    # reuse the host's own Debian mirror (the machine may reach no other)
    for src in [Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list")]:
        if src.exists():
            for line in src.read_text().splitlines():
                m = re.match(r"\s*(?:URIs:\s*|deb\s+(?:\[[^\]]*\]\s*)?)(\S+/debian)/?\s", line + " ")
                if m:
                    return m.group(1)
    return "http://deb.debian.org/debian"
