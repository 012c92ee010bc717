"""Study S1's space overhead of many small files: space consumed minus logical bytes.

The files are S3's file-server tree (7,500 files of 10 KB to 5 MB in 900
directories at paper scale, fslab.workloads.support.data), so the two studies' data
sets agree. Space is read on the fresh filesystem and after the tree through the
driver's capacity(), once the filesystem has committed (fslab.workloads.capacity),
so directories and metadata count. create_time runs to the end of a syncfs: the
tree on the device, at every page-cache policy (device_write_bytes shows it).
"""
from __future__ import annotations

from fslab.system.measure import step_usage
from fslab.plan.profiles import Profile
from fslab.records import Measurement
from fslab.system.proc import run
from fslab.workloads.support.devices import DeviceAccount
from fslab.workloads.support.data import Payload, dataset_seed, s3_tree, s3_tree_shape
from fslab.workloads.base import Case, CacheUse, Suite, UnitContext, UnitFailed, register
from fslab.workloads.capacity import SPACE_IMAGE_BYTES, settled_capacity, space_measurements


@register
class SmallFilesSuite(Suite):
    name = "smallfiles"
    study = "S1"
    needs_files = "writes files: needs a filesystem"
    description = "S1 small-file space overhead on S3's file tree: consumed minus logical bytes"

    def cases(self, spec, profile: Profile) -> list[Case]:
        shape = s3_tree_shape(profile)
        return [Case("smallfiles", {"files": shape["tree_files"], "dirs": shape["tree_dirs"]},
                     image_bytes=max(SPACE_IMAGE_BYTES, int(shape["tree_bytes"] * 1.5)))]

    def cache_policy(self, page_cache: str) -> CacheUse:
        return CacheUse("buffered writes, timed to the end of a syncfs: the time includes "
                        "the device at every policy where the filesystem honours syncfs "
                        "(write_amplification shows whether it did)", buffered=False)

    def measure(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        ctx.note_cache_policy(self)
        seed = dataset_seed(ctx.plan_seed, "smallfiles", ctx.key.iteration)
        tree = s3_tree(ctx.profile, seed)
        with self.mounted(ctx, case) as (path, inst):
            if inst is None:
                raise UnitFailed("smallfiles measures space through the filesystem's own "
                                 "capacity: not with --mountpoint")
            before = settled_capacity(inst, path)
            acct = DeviceAccount(inst.devices)
            with step_usage() as u:
                tree.materialize(path, Payload(seed))
                run(["sync", "-f", str(path)])
            written = acct.measurements(wrote=tree.total_bytes)
            after = settled_capacity(inst, path, commit=True)
        ms = space_measurements(before, after, tree.total_bytes) + written
        files = len(tree.files)
        overhead = next(m.value for m in ms if m.metric == "space_overhead")
        return ms + [self.metrics.measure("space_overhead_per_file", overhead / files),
                     self.metrics.measure("create_time", u.elapsed_s)]
