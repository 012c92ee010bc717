"""Study S1's space overhead of many small files: space consumed minus logical bytes.

The files are S3's file-server tree (7,500 files of 10 KB to 5 MB in 900
directories at paper scale, fslab.workloads.support.data), so the two studies' data
sets agree. Space is read before and after through the driver's capacity(),
once the filesystem has committed (fslab.workloads.capacity).
"""
from __future__ import annotations

from fslab.system.measure import step_usage
from fslab.plan.profiles import Profile
from fslab.records import Measurement
from fslab.workloads.support.data import Payload, dataset_seed, s3_tree, s3_tree_shape
from fslab.workloads.base import Case, Suite, UnitContext, UnitFailed, register
from fslab.workloads.capacity import SPACE_IMAGE_BYTES, settled_capacity, space_measurements


@register
class SmallFilesSuite(Suite):
    name = "smallfiles"
    needs_files = "writes files: needs a filesystem"
    description = "S1 small-file space overhead on S3's file tree: consumed minus logical bytes"

    def cases(self, spec, profile: Profile) -> list[Case]:
        shape = s3_tree_shape(profile)
        return [Case("smallfiles", {"files": shape["tree_files"], "dirs": shape["tree_dirs"]},
                     image_bytes=max(SPACE_IMAGE_BYTES, int(shape["tree_bytes"] * 1.5)))]

    def run(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        seed = dataset_seed(ctx.plan_seed, "smallfiles", ctx.key.iteration)
        tree = s3_tree(ctx.profile, seed)
        with self.mounted(ctx, case) as (path, inst):
            if inst is None:
                raise UnitFailed("smallfiles measures space through the filesystem's own "
                                 "capacity: not with --mountpoint")
            before = settled_capacity(inst, path)
            with step_usage() as u:
                tree.materialize(path, Payload(seed))
            after = settled_capacity(inst, path, commit=True)
        ms = space_measurements(before, after, tree.total_bytes)
        files = len(tree.files)
        overhead = next(m.value for m in ms if m.metric == "space_overhead")
        return ms + [Measurement("space_overhead_per_file", overhead / files, "B", "lower"),
                     Measurement("create_time", u.elapsed_s, "s", "lower")]
