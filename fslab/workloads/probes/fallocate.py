"""fallocate probe: fallocate(2) mode 0 through util-linux (no write-zeroes fallback), then
check the space is really allocated, not just the file size set."""
from __future__ import annotations

import os

from fslab.workloads.probes.base import MiB, Probe, ProbeResult
from fslab.filesystems.base import Instance
from fslab.system.proc import run

SIZE = 32 * MiB


class FallocateProbe(Probe):
    name = "fallocate"
    feature = "fallocate"

    def check(self, inst: Instance) -> ProbeResult:
        path = inst.mountpoint / "probe-prealloc"
        r = run(["fallocate", "-l", str(SIZE), str(path)], check=False)
        if not r.ok:
            return ProbeResult(False, f"fallocate(2) failed: {r.stderr.strip().split(': ')[-1]}")
        st = os.stat(path)
        allocated = st.st_blocks * 512
        ok = st.st_size == SIZE and allocated >= SIZE
        detail = (f"fallocate -l {SIZE // MiB}M: {allocated / MiB:.0f} MiB allocated" if ok else
                  f"fallocate succeeded but only {allocated / MiB:.1f} of {SIZE // MiB} MiB are "
                  "allocated (space not reserved)")
        return ProbeResult(ok, detail, {"size": st.st_size, "allocated": allocated})
