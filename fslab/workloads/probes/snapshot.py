"""Snapshot probe: snapshot a file, overwrite it, read the old version back from the snapshot."""
from __future__ import annotations

from fslab.workloads.probes.base import Enable, Probe, ProbeResult, no_mechanism, write_file
from fslab.filesystems.base import Driver, Instance


class SnapshotProbe(Probe):
    name = "snapshot"
    feature = "snapshots"

    def enable(self, driver: Driver) -> Enable | str:
        if driver.snapshots():
            return Enable()
        return no_mechanism(driver.name, "snapshot command (snapshots need LVM/dm-snapshot below it)")

    def check(self, inst: Instance) -> ProbeResult:
        mnt = inst.mountpoint
        before, after = b"version 1\n" * 1000, b"version 2\n" * 1000
        write_file(mnt / "probe.txt", before)
        take = inst.driver.snapshot(inst, "probe")
        write_file(mnt / "probe.txt", after)
        old, read = inst.driver.read_snapshot(inst, "probe", "probe.txt")
        live = (mnt / "probe.txt").read_bytes()
        ok = old == before and live == after
        detail = (f"{take}, overwrote the file, {read}: old version intact" if ok else
                  f"{take}: snapshot returned {len(old)} bytes that do not match the old version")
        return ProbeResult(ok, detail, {"snapshot_matches": old == before, "live_matches": live == after})
