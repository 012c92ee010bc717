"""Online grow probe: enlarge the loop image under the mounted filesystem, tell the loop
device (losetup -c), grow the filesystem with its own tool, and see the new size."""
from __future__ import annotations

import os

from fslab.features.probes.base import MiB, Probe, ProbeResult, total_bytes
from fslab.filesystems.base import Instance
from fslab.system.proc import run

GROW = 256 * MiB
CAP_SYS_RESOURCE = 24
SHOWN = {"ext2": "resize2fs", "ext3": "resize2fs", "ext4": "resize2fs", "xfs": "xfs_growfs",
         "btrfs": "btrfs filesystem resize max", "zfs": "zpool online -e"}


def has_capability(bit: int) -> bool:
    """Is capability `bit` in this process's effective set? (containers often drop some)"""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> bit & 1)
    return False


def grow_command(inst: Instance) -> list[str] | None:
    """The filesystem's own online-grow command (None if fslab knows none for it)."""
    fs, dev, mnt = inst.driver.name, inst.devices[0], str(inst.mountpoint)
    if fs in ("ext3", "ext4", "ext2"):
        return ["resize2fs", dev]
    if fs == "xfs":
        return ["xfs_growfs", mnt]
    if fs == "btrfs":
        return ["btrfs", "filesystem", "resize", "max", mnt]
    if fs == "zfs":
        return ["zpool", "online", "-e", inst.pool, dev]
    return None


class GrowProbe(Probe):
    name = "grow"
    feature = "online_grow"

    def enable(self, fs: str, impl: str):
        from fslab.features.probes.base import Enable, no_mechanism
        return Enable() if fs in SHOWN else \
            no_mechanism(fs, "online grow command known to fslab")

    def check(self, inst: Instance) -> ProbeResult:
        images = inst.target.image_paths()
        if not images:
            return ProbeResult(None, "the target is not a loop image: cannot grow its device")
        argv = grow_command(inst)
        before = total_bytes(inst)
        os.truncate(images[0], os.path.getsize(images[0]) + GROW)
        run(["losetup", "-c", inst.devices[0]])
        r = run(argv, check=False, timeout=300)
        tool = SHOWN[inst.driver.name]
        if not r.ok:
            lines = (r.stderr or r.stdout).strip().splitlines()
            why = lines[-1] if lines else f"exit {r.returncode}"
            if inst.driver.name.startswith("ext") and not has_capability(CAP_SYS_RESOURCE):
                why += " (ext4's online-resize ioctl needs CAP_SYS_RESOURCE, which this process lacks)"
            return ProbeResult(False, f"{tool} failed while mounted: {why}")
        after = total_bytes(inst)
        ok = after - before >= GROW // 2
        detail = (f"image +{GROW // MiB} MiB, {tool} while mounted: "
                  f"{before / MiB:.0f} -> {after / MiB:.0f} MiB" if ok else
                  f"{tool} ran but the size went {before / MiB:.0f} -> {after / MiB:.0f} MiB")
        evidence = {"before": before, "after": after, "command": argv}
        if not ok and inst.pool:
            # tell "cannot grow" from "grows only offline": export + import re-opens the vdev
            inst.cold_cache()
            evidence["after_export_import"] = offline = total_bytes(inst)
            detail += (f"; after zpool export/import: {offline / MiB:.0f} MiB"
                       + (" (grows only offline)" if offline - before >= GROW // 2 else ""))
        return ProbeResult(ok, detail, evidence)
