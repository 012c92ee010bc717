"""Data checksum probe: the integrity suite's experiment (fslab.workloads.support.bitflip) at its smallest:
flip bytes in a few data blocks on the image, remount, read back. Checksums work here when
every damaged file is detected (or healed); one silent read means they did not protect it."""
from __future__ import annotations

from fslab.workloads.probes.base import Probe, ProbeResult
from fslab.filesystems.base import Instance
from fslab.workloads.support.bitflip import corrupt_and_classify

FILES, BLOCKS, DAMAGED = 4, 4, 2


class ChecksumProbe(Probe):
    name = "checksum"
    feature = "data_checksums"

    def check(self, inst: Instance) -> ProbeResult:
        res = corrupt_and_classify(inst, damage="data", files=FILES, blocks_per_file=BLOCKS,
                                   damaged=DAMAGED, seed=5)
        counts, damaged = res["counts"], res["damaged"]
        evidence = {"counts": counts, "damaged": damaged, "victims": res.get("victims"),
                    "fs_reports": res.get("fs_reports"), "mount": res.get("mount")}
        if not damaged:
            return ProbeResult(None, "could not damage any data block: "
                               f"{res.get('not_damaged', 'tagged blocks not found on the image')}",
                               evidence)
        caught = counts["detected"] + counts["healed"]
        ok = counts["silent"] == 0
        how = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
        detail = (f"flipped bytes in {damaged} files' data blocks: {how}"
                  + ("" if ok else f" — {counts['silent']} read back wrong data without an error"))
        evidence["caught"] = caught
        return ProbeResult(ok, detail, evidence)
