"""The `features` suite: every live probe as a unit of a run, so its outcome is a record.

Each case is one feature (case = catalog key). The unit records `verified` (1 the
feature worked here, 0 it did not or could not be shown; unit bool, never ranked)
plus any number the probe measured, and keeps the reason and evidence in
probe.json, which the matrix and the recommendation cite.
"""
from __future__ import annotations

import orjson

from fslab.errors import FslabError, StepFailed
from fslab.features.catalog import BY_PROBE
from fslab.features.feature_claims import feature_claims_for, implementation_key
from fslab.workloads.probes import PROBES, Enable, ProbeResult
from fslab.plan.profiles import Profile
from fslab.records import Measurement
from fslab.workloads.base import Case, Suite, UnitContext, UnitFailed, register

PROBE_FILE = "probe.json"


@register
class FeaturesSuite(Suite):
    name = "features"
    description = "live checks of feature claims (snapshot, reflink, grow, checksums, ...)"

    def cases(self, spec, profile: Profile) -> list[Case]:
        names = spec.workloads or list(PROBES)
        unknown = [n for n in names if n not in PROBES and n not in {f.key for f in BY_PROBE.values()}]
        if unknown:
            raise FslabError(f"features: unknown probe(s) {unknown}; known: {', '.join(PROBES)}")
        by_key = {p.feature: p for p in PROBES.values()}
        probes = [PROBES.get(n) or by_key[n] for n in names]
        return [Case(name=p.feature, params={}, config=p.name, image_bytes=p.image_bytes)
                for p in probes]

    def measure(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        if ctx.mountpoint_dir is not None:
            raise UnitFailed("feature probes need a fresh loop image, not --mountpoint")
        probe = PROBES[case.config]
        fs, impl = ctx.spec.name, implementation_key(ctx.spec.name)
        how = probe.enable(ctx.driver)
        result = run_probe(ctx, probe, how)
        claim = feature_claims_for(fs, impl).get(case.name)
        path, rel = ctx.artifact(PROBE_FILE)
        path.write_bytes(orjson.dumps({
            "feature": case.name, "probe": probe.name, "fs": fs, "implementation": impl,
            "enabled_with": how.describe() if isinstance(how, Enable) else None,
            "claim": claim.as_dict() if claim else None, "outcome": result.outcome,
            "detail": result.detail, "evidence": result.evidence},
            option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY, default=str))
        ms = [self.metrics.measure("verified", 1.0 if result.works else 0.0, rel)]
        for m in result.metrics:
            m.artifact = rel
            ms.append(m)
        return ms


def run_probe(ctx: UnitContext, probe, how: Enable | str) -> ProbeResult:
    """Make a filesystem with the feature switched on, run the check, always tear down."""
    if isinstance(how, str):
        return ProbeResult(False, how)
    spec = ctx.spec.model_copy(update={
        "mkfs_options": [*ctx.spec.mkfs_options, *how.mkfs_options],
        "mount_options": [*ctx.spec.mount_options, *how.mount_options],
        "properties": {**ctx.spec.properties, **how.properties}})
    inst = ctx.filesystem(probe.image_bytes, label=f"{ctx.spec.name}-probe-{probe.name}", spec=spec)
    entered = False
    try:
        with inst:
            entered = True
            ctx.environment["filesystem"] = inst.effective()
            return probe.check(inst)
    except (StepFailed, OSError, ValueError) as e:
        where = "checking" if entered else "setting up"
        return ProbeResult(False, f"failed while {where} ({how.describe()}): {e}")
