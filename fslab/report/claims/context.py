"""What a run's environment changes about its claims: which ZFS made the numbers, and
whether the profile scaled the study's sizes down.

A run records the ZFS implementation per filesystem level when it mounted it and host-wide
among its tools; a level's own record wins (RunEnvironment.implementation)."""
from __future__ import annotations

import tomllib

from fslab.store.environment import RunEnvironment

FUSE_REASON = ("ZFS here is {label}, a userspace port, not the kernel ZFS the study ran: its "
               "speed and CPU say nothing about that one (--target guest runs OpenZFS)")


def fuse_levels(env: RunEnvironment, labels: list[str]) -> list[str]:
    """The levels among `labels` whose numbers came from zfs-fuse."""
    return [x for x in labels if "fuse" in env.implementation(x).lower()]


def not_comparable_reason(env: RunEnvironment, labels: list[str], about: str) -> str:
    """Why a speed or CPU claim cannot be judged here ('' when it can)."""
    if about == "space":
        return ""
    if about == "device":
        return ("a figure of the study's own NVMe device, not of a filesystem: this device's "
                "says nothing about it")
    fuse = fuse_levels(env, labels)
    return FUSE_REASON.format(label=env.implementation(fuse[0])) if fuse else ""


def emulation_note(env: RunEnvironment) -> str:
    """Said on every speed or CPU claim of a run measured in a guest under TCG."""
    if env.emulated:
        return ("measured in a TCG guest: times and CPU are the emulator's (CPU-bound paths "
                "slowed more than I/O), compared among this guest's filesystems only")
    return ""


def profile_note(env: RunEnvironment) -> str:
    if env.profile_scaled:
        return f"profile {env.profile.get('name')}: the study's sizes and durations scaled down"
    return ""


def plan_name(run: dict | None) -> str:
    """The [run] name of the run's stored plan ('S2 fio statistics'), or ''."""
    text = (run or {}).get("plan") or ""
    try:
        return str((tomllib.loads(text).get("run") or {}).get("name") or "")
    except (tomllib.TOMLDecodeError, TypeError):
        return ""


def history_note(env: RunEnvironment, suite: str, cases: list[str]) -> str:
    """Said on every claim of a replayed history (S4) when a generated one stood in for the
    study's (the Linux kernel's): the report's header alone is easy to miss."""
    workloads = env.data.get("workloads") or {}
    for case in cases:
        w = workloads.get(f"{suite}:{case}")
        if not isinstance(w, dict) or not str(w.get("history", "")).startswith("generated"):
            continue
        why = w.get("stand_in") or "the profile replays a generated history; paper clones the study's"
        return f"a generated source history stood in for the study's Linux history ({why})"
    return ""
