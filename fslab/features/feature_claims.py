"""What each filesystem's own documentation claims, one row per catalog feature.

Each driver carries its own table (`Driver.feature_claims`, keyed by implementation: ZFS
runs here either as kernel OpenZFS or as Debian's zfs-fuse 0.7.0, and the two
differ enough to get separate tables); this module gathers them. Every claim
names the document it comes from, so a reader can check it.
"""
from __future__ import annotations

from fslab import filesystems
from fslab.errors import FslabError
from fslab.filesystems.base import UNKNOWN, FeatureClaim
from fslab.features.catalog import FEATURES

__all__ = ["FEATURE_CLAIMS", "UNKNOWN", "FeatureClaim", "feature_claims_for", "implementation_key"]


def _gather() -> dict[str, dict[str, FeatureClaim]]:
    out: dict[str, dict[str, FeatureClaim]] = {}
    for name in filesystems.names():
        out.update(filesystems.get(name).feature_claims)
    return out


FEATURE_CLAIMS: dict[str, dict[str, FeatureClaim]] = _gather()


def implementation_key(fs: str) -> str:
    """Which table applies here: the driver's implementation (ZFS: kernel OpenZFS or zfs-fuse)."""
    try:
        return filesystems.get(fs).implementation()
    except FslabError:   # not a known driver: its own name
        return fs


def feature_claims_for(fs: str, implementation: str | None = None) -> dict[str, FeatureClaim]:
    """Every catalog feature's claim for `fs` (UNKNOWN where the table has none)."""
    table = FEATURE_CLAIMS.get(implementation or implementation_key(fs), {})
    return {f.key: table.get(f.key, UNKNOWN) for f in FEATURES}
