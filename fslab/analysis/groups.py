"""What is compared with what: the factor and the groups.

A *group* is one measured quantity (e.g. randwrite write_iops on one host); the
*factor* is what varies inside a group (default: filesystem + variant). Every suite
is analysed the same way: nothing here knows what a metric means.

When the factor is the host, the run does not split groups either: comparing two hosts
means their runs differ too. When it is the run, the host still splits groups, so two
multi-host runs compare host by host.
"""
from __future__ import annotations

from typing import Sequence

import pandas as pd

from fslab.records import level_label, params_order

IDENTITY = ("run_id", "host", "fs", "variant", "suite", "case", "params", "metric")
FS_FACTOR = ("fs", "variant")
_WHERE = {"run_id", "host"}


def normalize_factor(factor: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(factor, str):
        factor = tuple(f.strip() for f in factor.split("+"))
    unknown = [f for f in factor if f not in IDENTITY or f == "metric"]
    if unknown or not factor:
        raise ValueError(f"factor {'+'.join(factor)!r}: choose from "
                         f"{', '.join(c for c in IDENTITY if c != 'metric')} (joined with '+')")
    return tuple(factor)


def group_columns(factor: Sequence[str]) -> list[str]:
    drop = set(factor)
    # hosts compared across runs: the run differs too. Runs compared keep host in the
    # group, so two multi-host runs compare host by host (plain runs are all 'localhost')
    if "host" in drop:
        drop |= _WHERE
    return [c for c in IDENTITY if c not in drop]


def level_labels(records: pd.DataFrame, factor: Sequence[str]) -> pd.Series:
    """One readable label per row for its factor level: 'ext4', 'zfs:dedup', a run id."""
    if tuple(factor) == FS_FACTOR:
        return pd.Series([level_label(fs, variant) for fs, variant in zip(
            records["fs"].astype(str), records["variant"].astype(str))], index=records.index,
            dtype=object)
    label = records[factor[0]].astype(str)
    for col in factor[1:]:
        label = label + ":" + records[col].astype(str)
    return label


def with_levels(records: pd.DataFrame, factor: Sequence[str]) -> pd.DataFrame:
    out = records.copy()
    out["level"] = level_labels(out, factor)
    out["value"] = out["value"].astype(float)
    if "params" in out:   # every grouping by params then sorts numbers as numbers
        out["params"] = in_params_order(out["params"])
    return out


def in_params_order(params: pd.Series) -> pd.Series:
    """The params column as an ordered category whose order is params_order's: tables
    list an aging run's steps 0, 25, 50, 75, 100 (as text: 0, 100, 25, 50, 75)."""
    shown = sorted(pd.unique(params.dropna()), key=params_order)
    return pd.Series(pd.Categorical(params, categories=shown, ordered=True), index=params.index)
