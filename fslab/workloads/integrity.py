"""The integrity suite: does the filesystem notice bytes flipped under it? (see fslab/workloads/support/bitflip.py)

Plan table:
    [[suite]]
    kind = "integrity"
    workloads = ["data", "metadata"]   # default: both
    files = 16            # tagged files written (default: scaled by profile, >= 16)
    blocks_per_file = 16  # 4 KiB blocks per file
    damaged = 8           # files (data) or directories (metadata) damaged
    copies = "one"        # data: flip one on-disk copy of each damaged block, or "all" copies
                          # (metadata always flips every copy: journal, log and DUP copies too)
    zfs_metadata = true   # ZFS metadata damage, located with zdb: by default on kernel
                          # OpenZFS, not on zfs-fuse 0.7, which it once left deadlocked for
                          # every user of its daemon (see docs/reliability.md)

Redundancy comes from the filesystem variant: btrfs `devices = 2` (raid1) or
`mkfs_options = ["-d", "dup"]`, zfs `properties = { copies = "2" }` or `devices = 2`
(mirror). Every count is what was measured; the raw evidence (kernel log lines,
device stats, zpool status, scrub and checker output) is in integrity.json.

`detected`, `silent`, `healed` and `healed_after_scrub` count damaged blocks (files or
directories) out of the unit's `damaged` ones: the catalogue declares that (fslab/metrics), so the analysis
compares filesystems on the blocks pooled over rounds, not on one count per round.
"""
from __future__ import annotations

import orjson

from fslab.errors import FslabError
from fslab.workloads.support.bitflip import corrupt_and_classify
from fslab.plan.profiles import Profile
from fslab.records import Measurement
from fslab import metrics
from fslab.workloads.base import Case, Suite, UnitContext, UnitFailed, register

KNOWN = {"files", "blocks_per_file", "damaged", "copies", "zfs_metadata"}

@register
class IntegritySuite(Suite):
    name = "integrity"
    description = "flip bytes in data/metadata blocks on the image; detected, silent or healed?"

    def cases(self, spec, profile: Profile) -> list[Case]:
        o, _ = self.options(spec, KNOWN)
        files = int(o.get("files", profile.count(64, minimum=16)))
        damaged = int(o.get("damaged", max(1, files // 2)))
        config = {"files": files, "blocks_per_file": int(o.get("blocks_per_file", 16)),
                  "damaged": min(damaged, files), "copies": str(o.get("copies", "one")),
                  "zfs_metadata": (bool(o["zfs_metadata"]) if "zfs_metadata" in o else None)}
        if config["copies"] not in ("one", "all"):
            raise FslabError("[[suite]] kind='integrity': copies must be 'one' or 'all'")
        names = spec.workloads or ["data", "metadata"]
        for n in names:
            if n not in ("data", "metadata"):
                raise FslabError(f"integrity workload {n!r}: choose 'data' or 'metadata'")
        # the data is written once: the image only needs room for it plus the fs's own overhead
        need = files * config["blocks_per_file"] * 4096 * 3 + (64 << 20)
        # metadata damage always hits every copy of the entry (see fslab/workloads/support/bitflip.py)
        return [Case(name=n, params={"damage": n, "copies": config["copies"] if n == "data" else "all"},
                     config=config, image_bytes=need) for n in names]

    def measure(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        if ctx.mountpoint_dir is not None:
            raise UnitFailed("integrity needs a loop image it may corrupt; not on --mountpoint")
        out_path, rel = ctx.artifact("integrity.json")
        with self.mounted(ctx, case) as (_, inst):
            res = corrupt_and_classify(inst, damage=case.name, seed=ctx.seed("integrity"),
                                       log=ctx.log, **case.config)
        out_path.write_bytes(orjson.dumps(res, option=orjson.OPT_INDENT_2))
        ms = measurements(res, rel)
        if res["damaged"] == 0:
            ctx.log(f"integrity {case.name}: nothing damaged: {res.get('not_damaged')}")
        return ms


def measurements(res: dict, artifact: str) -> list[Measurement]:
    """The integrity result as records; counts only for what was actually damaged."""
    def m(metric, value):
        return metrics.measure("integrity", metric, value, artifact)

    ms = [m("damaged", res["damaged"])]
    if res["damaged"]:
        ms += [m("detected", res["counts"]["detected"]),
               m("silent", res["counts"]["silent"]),
               m("healed", res["counts"]["healed"])]
        after = [v["after_scrub"] for v in res["victims"] if v["after_scrub"]]
        if after:   # a scrub ran: every damaged block was read again (bitflip._scrub_and_reread)
            ms.append(m("healed_after_scrub", sum(a == "healed" for a in after)))
        ms.append(m("collateral_damage", len(res.get("collateral", []))))
    if res.get("mount", {}).get("ok") is not None:
        ms.append(m("mount_ok", res["mount"]["ok"]))
    reports = res.get("fs_reports") or {}
    if "kernel_log" in reports:
        ms.append(m("kernel_log_lines", len(reports["kernel_log"])))
    if "btrfs_device_stats" in reports:
        ms.append(m("reported_corruption_errs", reports["btrfs_device_stats"].get("corruption_errs", 0)))
    if "zpool" in reports:
        ms.append(m("reported_cksum_errors", reports["zpool"]["cksum"]))
    if res.get("scrub"):
        ms.append(m("scrub_clean", bool(res["scrub"].get("clean"))))
        for key in ("corrected", "uncorrectable"):
            if key in res["scrub"]:
                ms.append(m(f"scrub_{key}", res["scrub"][key]))
    if res.get("fsck") and res["fsck"].get("clean") is not None:
        ms.append(m("fsck_clean", bool(res["fsck"]["clean"])))
    cross = res.get("fiemap_crosscheck")
    if cross and cross["checked"]:
        ms.append(m("fiemap_agreement", cross["agree"] / cross["checked"]))
    if "tagged_blocks_written" in res:
        ms.append(m("tagged_blocks_found", res["tagged_blocks_found"]))
    return ms
