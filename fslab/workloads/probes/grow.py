"""Online grow probe: enlarge the loop image under the mounted filesystem, tell the loop
device (losetup -c), grow the filesystem with its own tool, and see the new size."""
from __future__ import annotations

import os

from fslab.workloads.probes.base import MiB, Probe, ProbeResult, total_bytes, Enable, no_mechanism
from fslab.filesystems.base import Driver, Instance
from fslab.system.proc import run

GROW = 256 * MiB


class GrowProbe(Probe):
    name = "grow"
    feature = "online_grow"

    def enable(self, driver: Driver):
        return Enable() if driver.grow_tool else \
            no_mechanism(driver.name, "online grow command known to fslab")

    def check(self, inst: Instance) -> ProbeResult:
        images = inst.target.image_paths()
        if not images:
            return ProbeResult(None, "the target is not a loop image: cannot grow its device")
        argv = inst.driver.grow_command(inst)
        before = total_bytes(inst)
        os.truncate(images[0], os.path.getsize(images[0]) + GROW)
        run(["losetup", "-c", inst.devices[0]])
        r = run(argv, check=False, timeout=300)
        tool = inst.driver.grow_tool
        if not r.ok:
            lines = (r.stderr or r.stdout).strip().splitlines()
            why = lines[-1] if lines else f"exit {r.returncode}"
            why += inst.driver.grow_failure_hint()
            return ProbeResult(False, f"{tool} failed while mounted: {why}")
        after = total_bytes(inst)
        ok = after - before >= GROW // 2
        detail = (f"image +{GROW // MiB} MiB, {tool} while mounted: "
                  f"{before / MiB:.0f} -> {after / MiB:.0f} MiB" if ok else
                  f"{tool} ran but the size went {before / MiB:.0f} -> {after / MiB:.0f} MiB")
        evidence = {"before": before, "after": after, "command": argv}
        reopened = inst.driver.reopen_devices(inst) if not ok else None
        if reopened:
            # tell "cannot grow" from "grows only offline": re-opening the devices (ZFS:
            # export + import re-opens the vdev) shows the size an offline grow gets
            evidence["after_export_import"] = offline = total_bytes(inst)
            detail += (f"; after {reopened}: {offline / MiB:.0f} MiB"
                       + (" (grows only offline)" if offline - before >= GROW // 2 else ""))
        return ProbeResult(ok, detail, evidence)
