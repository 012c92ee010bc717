"""Snapshot probe: snapshot a file, overwrite it, read the old version back from the snapshot."""
from __future__ import annotations

from fslab.features.probes.base import Enable, Probe, ProbeResult, no_mechanism, write_file
from fslab.filesystems.base import Instance
from fslab.system.proc import run


class SnapshotProbe(Probe):
    name = "snapshot"
    feature = "snapshots"

    def enable(self, fs: str, impl: str) -> Enable | str:
        if fs in ("btrfs", "zfs"):
            return Enable()
        return no_mechanism(fs, "snapshot command (snapshots need LVM/dm-snapshot below it)")

    def check(self, inst: Instance) -> ProbeResult:
        mnt = inst.mountpoint
        before, after = b"version 1\n" * 1000, b"version 2\n" * 1000
        write_file(mnt / "probe.txt", before)
        if inst.pool:
            # a clone, not .zfs/snapshot: zfs-fuse has no working .zfs directory
            run(["zfs", "snapshot", f"{inst.pool}@probe"])
            take = f"zfs snapshot {inst.pool}@probe"
        else:
            run(["btrfs", "subvolume", "snapshot", "-r", str(mnt), str(mnt / "probe-snap")])
            take = "btrfs subvolume snapshot -r"
        write_file(mnt / "probe.txt", after)
        if inst.pool:
            run(["zfs", "clone", f"{inst.pool}@probe", f"{inst.pool}/probe-clone"])
            try:
                old = (mnt / "probe-clone" / "probe.txt").read_bytes()
            finally:
                run(["zfs", "destroy", "-f", f"{inst.pool}/probe-clone"], check=False)
            read = "read back through zfs clone"
        else:
            old = (mnt / "probe-snap" / "probe.txt").read_bytes()
            read = "read back from the snapshot subvolume"
        live = (mnt / "probe.txt").read_bytes()
        ok = old == before and live == after
        detail = (f"{take}, overwrote the file, {read}: old version intact" if ok else
                  f"{take}: snapshot returned {len(old)} bytes that do not match the old version")
        return ProbeResult(ok, detail, {"snapshot_matches": old == before, "live_matches": live == after})
