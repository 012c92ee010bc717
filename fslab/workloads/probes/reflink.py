"""Reflink probe: `cp --reflink=always`, then check the copy is right and costs no data space."""
from __future__ import annotations

from fslab.workloads.probes.base import (MiB, Probe, ProbeResult, digest, random_bytes,
                                        used_bytes, write_file)
from fslab.filesystems.base import Instance
from fslab.system.proc import run

SIZE = 16 * MiB


class ReflinkProbe(Probe):
    name = "reflink"
    feature = "reflinks"

    def check(self, inst: Instance) -> ProbeResult:
        src, dst = inst.mountpoint / "probe-src", inst.mountpoint / "probe-clone"
        write_file(src, random_bytes(SIZE, seed=1))
        before = used_bytes(inst)
        r = run(["cp", "--reflink=always", str(src), str(dst)], check=False)
        if not r.ok:
            return ProbeResult(False, f"cp --reflink=always failed: {r.stderr.strip().split(': ')[-1]}")
        grew = used_bytes(inst) - before
        same = digest(src) == digest(dst)
        shared = grew < SIZE // 4
        ok = same and shared
        detail = (f"cp --reflink=always of {SIZE // MiB} MiB: identical copy, space used grew by "
                  f"{grew / MiB:.1f} MiB (shared extents)" if ok else
                  f"cp --reflink=always succeeded but the copy {'differs' if not same else ''}"
                  f"{'' if shared else f' used {grew / MiB:.1f} MiB more space'}")
        return ProbeResult(ok, detail, {"bytes": SIZE, "used_growth": grew, "identical": same})
