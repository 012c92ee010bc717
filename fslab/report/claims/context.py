"""What a run's environment changes about its claims: which ZFS made the numbers, and
whether the profile scaled the study's sizes down.

A run records the ZFS implementation per filesystem level when it mounted it
(environment["filesystems"][label]["in_effect"]["implementation"]) and host-wide among its
tools (environment["tools"]["zfs implementation"]); a level's own record wins."""
from __future__ import annotations

import tomllib

FUSE_REASON = ("ZFS here is {label}, a userspace port, not the kernel ZFS the study ran: its "
               "speed and CPU say nothing about that one (--target guest runs OpenZFS)")


def implementation(env: dict, label: str) -> str:
    """The implementation label of a filesystem level ('zfs-fuse 0.7.0 (FUSE daemon)', or
    '' when the run did not record one)."""
    fs = ((env.get("filesystems") or {}).get(label) or {}).get("in_effect") or {}
    if fs.get("implementation"):
        return str(fs.get("implementation_label") or fs["implementation"])
    name = label.split(":", 1)[0]
    return str((env.get("tools") or {}).get(f"{name} implementation") or "")


def fuse_levels(env: dict, labels: list[str]) -> list[str]:
    """The levels among `labels` whose numbers came from zfs-fuse."""
    return [x for x in labels if "fuse" in implementation(env, x).lower()]


def not_comparable_reason(env: dict, labels: list[str], about: str) -> str:
    """Why a speed or CPU claim cannot be judged here ('' when it can)."""
    if about == "space":
        return ""
    if about == "device":
        return ("a figure of the study's own NVMe device, not of a filesystem: this device's "
                "says nothing about it")
    fuse = fuse_levels(env, labels)
    return FUSE_REASON.format(label=implementation(env, fuse[0])) if fuse else ""


def profile_note(env: dict) -> str:
    prof = env.get("profile") or {}
    if prof.get("scaled"):
        return f"profile {prof.get('name')}: the study's sizes and durations scaled down"
    return ""


def plan_name(run: dict | None) -> str:
    """The [run] name of the run's stored plan ('S2 fio statistics'), or ''."""
    text = (run or {}).get("plan") or ""
    try:
        return str((tomllib.loads(text).get("run") or {}).get("name") or "")
    except (tomllib.TOMLDecodeError, TypeError):
        return ""
