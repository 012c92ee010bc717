"""A plan from `fslab run`'s flags: a plan file (or none) with the command line's
overrides (filesystems, suites, profile, iterations, fio options, mkfs/mount options,
job files, page-cache policy, raw baseline). The stored plan text says what ran."""
from __future__ import annotations

import shlex

from fslab import plan as plans
from fslab.errors import FslabError


def apply_cache_and_baseline(the_plan, page_cache: str | None, baseline: str | None) -> None:
    """--page-cache and --baseline raw, written into the plan so the stored plan says them."""
    if page_cache is None and baseline is None:
        return
    if page_cache is not None:
        if page_cache not in plans.PAGE_CACHE_POLICIES:
            raise FslabError(f"--page-cache {page_cache!r}: choose off or on")
        the_plan.run.page_cache = page_cache
    if baseline is not None:
        if baseline != "raw":
            raise FslabError(f"--baseline {baseline!r}: the only baseline is raw (the bare device)")
        if not any(f.name == "raw" for f in the_plan.filesystem):
            the_plan.filesystem.append(plans.FilesystemSpec(name="raw"))
    the_plan.source_text = plans.to_toml(the_plan)


def from_flags(plan_file, fs, suite, profile, iterations, seed, fio, mkfs_options, mount_options,
                adaptive=False, job=(), image_size=None):
    p = _without_jobs(plan_file, fs, suite, profile, iterations, seed, fio, mkfs_options,
                                 mount_options, adaptive, bool(job))
    if image_size and not job:   # every filesystem's loop image (job files size their own)
        for f in p.filesystem:
            f.image_size = image_size
        p.source_text = plans.to_toml(p)
    # here, not at the top: this module loads at start-up; keeps `fslab --help` fast
    from fslab.workloads.support.jobfile import add_job_files
    fio_opts = dict(item.partition("=")[::2] for item in fio)   # checked by the call above
    if add_job_files(p, job, image_size if job else None, profile_explicit=bool(profile) or (
            plan_file is not None and "profile" in p.run.model_fields_set),
            fio_options={k.strip(): v.strip() for k, v in fio_opts.items()}):
        p.source_text = plans.to_toml(p)   # the stored plan names the files by absolute path
    return p


def _without_jobs(plan_file, fs, suite, profile, iterations, seed, fio, mkfs_options,
                             mount_options, adaptive, have_jobs):
    fio_opts = {}
    for item in fio:
        k, sep, v = item.partition("=")
        if not sep:
            raise FslabError(f"--fio {item!r}: expected KEY=VALUE")
        fio_opts[k.strip()] = v.strip()
    try:
        mkfs = shlex.split(mkfs_options) if mkfs_options else None
    except ValueError as e:   # an unclosed quote
        raise FslabError(f"--mkfs-options {mkfs_options!r}: {e}") from None
    mnt = [o for o in mount_options.split(",") if o] if mount_options else None
    # here, not at the top: this module loads at start-up; keeps `fslab --help` fast
    from fslab.plan.variants import parse_fs, spec_fields
    items = parse_fs(fs) if fs is not None else None
    if plan_file:
        p = plans.load(plan_file)
        if items:   # keep the plan's variants of the named filesystems, add plain ones otherwise
            p.filesystem = _chosen(p.filesystem, items)
        if suite:
            wanted = [x.strip() for x in suite.split(",")]
            p.suite = [s for s in p.suite if s.kind in wanted] + \
                [plans.SuiteSpec(kind=w) for w in wanted if w not in {s.kind for s in p.suite}]
        if profile:
            p.run.profile = plans.RunSection(profile=profile).profile
        if iterations:
            p.run.iterations = iterations
        if seed is not None:
            p.run.seed = seed
        if adaptive:
            p.run.adaptive = True
        refuse_options_for_all(p.filesystem, mkfs_options if mkfs else None,
                               mount_options if mnt else None)
        for f in p.filesystem:
            if mkfs:
                f.mkfs_options = [*f.mkfs_options, *mkfs]
            if mnt:
                f.mount_options = [*f.mount_options, *mnt]
        if fio_opts:   # --fio wins over the plan, at every profile (its overlays too)
            for s in p.suite:
                if s.kind == "fio":
                    merged = {**(s.options.get("fio") or {}), **fio_opts}
                    setattr(s, "fio", merged)
                    s.model_extra["fio"] = merged
                    # what the user typed runs as typed: the profile scales the plan's values only
                    unscaled = sorted({*(s.options.get("unscaled") or ()), *fio_opts})
                    setattr(s, "unscaled", unscaled)
                    s.model_extra["unscaled"] = unscaled
                    for overlay in ((s.model_extra.get("profiles") or {}).values()):
                        if isinstance(overlay, dict) and "fio" in overlay:
                            overlay["fio"] = {**overlay["fio"], **fio_opts}
        if not p.filesystem:
            p.filesystem = [plans.FilesystemSpec(name=n) for n in DEFAULT_FS]
        if not p.suite and not have_jobs:
            p.suite = [plans.SuiteSpec(kind="fio")]
        text = p.source_text
        changed = any([fs, suite, profile, iterations, seed is not None, mkfs, mnt, fio_opts,
                       adaptive])
        p.source_text = plans.to_toml(p) if changed else text
        p.check_unique_variants()
        return p
    specs = [plans.FilesystemSpec(**spec_fields(v)) for v in items] if items else \
        [plans.FilesystemSpec(name=n) for n in DEFAULT_FS]
    refuse_options_for_all(specs, mkfs_options if mkfs else None, mount_options if mnt else None)
    suites = [x.strip() for x in (suite or ("" if have_jobs else "fio")).split(",") if x.strip()]
    return plans.from_cli(specs, suites, profile or "quick", iterations,
                          42 if seed is None else seed, mkfs, mnt, fio_opts, adaptive)


DEFAULT_FS = ("ext4", "xfs", "btrfs", "zfs")


def _chosen(planned: list, items: list) -> list:
    """--fs over a plan file: a plain NAME or label picks the plan's variants of it (a plain
    default when the plan has none); an item with [options] adds that variant."""
    # here, not at the top: this module loads at start-up; keeps `fslab --help` fast
    from fslab.plan.variants import spec_fields
    kept = [f for f in planned if any(not v.has_options and (f.name == v.label or f.label == v.label)
                                      for v in items)]
    have = {f.name for f in kept}
    for v in items:
        if v.has_options:
            if any(f.label == v.label for f in planned):
                raise FslabError(f"--fs {v.label}[...]: the plan already has a variant "
                                 f"{v.label}; name this one differently")
            kept.append(plans.FilesystemSpec(**spec_fields(v)))
        elif v.name not in have and not any(f.label == v.label for f in kept):
            kept.append(plans.FilesystemSpec(name=v.name, variant=v.variant))
    return kept


def _own_options(f) -> bool:
    return bool(f.mkfs_options or f.mount_options or f.properties or f.pool_properties)


def refuse_options_for_all(specs: list, mkfs_options: str | None, mount_options: str | None) -> None:
    """--mkfs-options/--mount-options apply to every filesystem: refused when the variants
    differ (some carry options of their own, or one filesystem comes in several variants),
    since they would silently make the variants alike or change options they already chose."""
    given = [(flag, value) for flag, value in (("--mkfs-options", mkfs_options),
                                                ("--mount-options", mount_options)) if value]
    if not given:
        return
    # here, not at the top: this module loads at start-up; keeps `fslab --help` fast
    from fslab.plan.variants import item_text
    flag, value = given[0]
    own = [f for f in specs if _own_options(f)]
    names = [f.name for f in specs]
    twice = [f for f in specs if names.count(f.name) > 1]
    if not own and not twice:
        return
    chosen = own[0] if own else twice[-1]
    if chosen.variant == "default":
        chosen = chosen.model_copy(update={"variant": "mine"})
    add = ({"mkfs_options": [*chosen.mkfs_options, *shlex.split(value)]}
           if flag == "--mkfs-options" else
           {"mount_options": [*chosen.mount_options, *(o for o in value.split(",") if o)]})
    example = item_text(chosen.model_copy(update=add))
    if own:
        labels = [f.label for f in own]
        raise FslabError(f"{flag} applies to every filesystem, but {', '.join(labels)} "
                         f"{'has options of its' if len(own) == 1 else 'have options of their'} "
                         f"own: put it in the brackets of the variants that want it, e.g. "
                         f"--fs '{example}'")
    labels = [f.label for f in twice]
    raise FslabError(f"{flag} would give {' and '.join(labels)} the same options (it applies "
                     f"to every filesystem): give each variant its own, e.g. --fs "
                     f"'{','.join([*labels[:-1], example])}'")
