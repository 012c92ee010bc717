"""Compression probe: write compressible text with the filesystem's compression on and
compare logical bytes with the space allocated for them."""
from __future__ import annotations

from fslab.workloads.probes.base import (Enable, MiB, Probe, ProbeResult, compressible_bytes,
                                        no_mechanism, used_bytes, write_file)
from fslab.filesystems.base import Driver, Instance
from fslab import metrics

SIZE = 32 * MiB
MIN_RATIO = 1.5     # text compresses 3-10x; anything below this is not compression


class CompressionProbe(Probe):
    name = "compression"
    feature = "compression"

    def enable(self, driver: Driver) -> Enable | str:
        return driver.compression_enable() or no_mechanism(driver.name, "transparent compression")

    def check(self, inst: Instance) -> ProbeResult:
        before = used_bytes(inst)
        write_file(inst.mountpoint / "probe-text", compressible_bytes(SIZE, seed=2))
        grew = max(used_bytes(inst) - before, 1)
        ratio = SIZE / grew
        ok = ratio >= MIN_RATIO
        detail = (f"{SIZE // MiB} MiB of text took {grew / MiB:.1f} MiB: ratio {ratio:.1f}x"
                  + ("" if ok else f" (below {MIN_RATIO}x: not compressed)"))
        return ProbeResult(ok, detail, {"logical": SIZE, "allocated": grew, "ratio": ratio},
                           [metrics.measure("features", "compression_ratio", ratio)])
