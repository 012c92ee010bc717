"""A plan from `fslab run`'s flags: a plan file (or none) with the command line's
overrides (filesystems, suites, profile, iterations, fio options, mkfs/mount options,
job files, page-cache policy, raw baseline). The stored plan text says what ran."""
from __future__ import annotations

import shlex
from pathlib import Path

from fslab import plan as plans
from fslab.errors import FslabError
from fslab.records import DEFAULT_VARIANT


def apply_cache_and_baseline(the_plan, page_cache: str | None, baseline: str | None):
    """--page-cache and --baseline raw laid onto a plan (a new plan: the stored text is the
    caller's to write)."""
    run, fss = the_plan.run, the_plan.filesystem
    if page_cache is not None:
        if page_cache not in plans.PAGE_CACHE_POLICIES:
            raise FslabError(f"--page-cache {page_cache!r}: choose off or on")
        run = run.model_copy(update={"page_cache": page_cache})
    if baseline is not None:
        if baseline != "raw":
            raise FslabError(f"--baseline {baseline!r}: the only baseline is raw (the bare device)")
        if not any(f.name == "raw" for f in fss):
            fss = [*fss, plans.FilesystemSpec(name="raw")]
    return the_plan.model_copy(update={"run": run, "filesystem": fss})


def from_flags(plan_file, fs, suite, profile, iterations, seed, fio, mkfs_options, mount_options,
               adaptive=False, job=(), image_size=None, page_cache=None, baseline=None,
               with_text=True, replay=(), pace=False):
    """The plan `fslab run` means: built once from the flags, then never edited. Its
    stored text is the plan file as written when no flag changed it, else the plan as
    built (one serialisation; job files named by absolute path). `with_text=False`: the
    caller builds on it and writes the text itself."""
    p, rewrite = _without_jobs(plan_file, fs, suite, profile, iterations, seed, fio,
                               mkfs_options, mount_options, adaptive, bool(job) or bool(replay))
    if replay or pace:   # captured workloads (fslab capture): a replay suite each
        p, rewrite = _with_replays(p, replay, pace), True
    if image_size and not job:   # every filesystem's loop image (job files size their own)
        p = p.model_copy(update={"filesystem": [f.model_copy(update={"image_size": image_size})
                                                for f in p.filesystem]})
        rewrite = True
    # here, not at the top: this module loads at start-up; keeps `fslab --help` fast
    from fslab.workloads.support.jobfile import add_job_files
    fio_opts = dict(item.partition("=")[::2] for item in fio)   # checked by the call above
    p, with_jobs = add_job_files(p, job, image_size if job else None, profile_explicit=bool(
        profile) or (plan_file is not None and "profile" in p.run.model_fields_set),
        fio_options={k.strip(): v.strip() for k, v in fio_opts.items()})
    if page_cache is not None or baseline is not None:
        p = apply_cache_and_baseline(p, page_cache, baseline)
    if with_text and (rewrite or with_jobs or page_cache is not None or baseline is not None):
        p = p.model_copy(update={"source_text": plans.to_toml(p)})
    p.check_unique_variants()
    return p


def _without_jobs(plan_file, fs, suite, profile, iterations, seed, fio, mkfs_options,
                  mount_options, adaptive, have_jobs):
    """(the plan of the flags without --job and --image-size, whether its text must be
    written anew)."""
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
        fss, suites = list(p.filesystem), list(p.suite)
        if items:   # keep the plan's variants of the named filesystems, add plain ones otherwise
            fss = _chosen(fss, items)
        if suite:
            wanted = [x.strip() for x in suite.split(",")]
            suites = [s for s in suites if s.kind in wanted] + \
                [plans.SuiteSpec(kind=w) for w in wanted if w not in {s.kind for s in suites}]
        run = {}
        if profile:
            run["profile"] = plans.RunSection(profile=profile).profile
        if iterations:
            run["iterations"] = iterations
        if seed is not None:
            run["seed"] = seed
        if adaptive:
            run["adaptive"] = True
        refuse_options_for_all(fss, mkfs_options if mkfs else None,
                               mount_options if mnt else None)
        if mkfs or mnt:
            fss = [f.model_copy(update={"mkfs_options": [*f.mkfs_options, *(mkfs or ())],
                                        "mount_options": [*f.mount_options, *(mnt or ())]})
                   for f in fss]
        if fio_opts:   # --fio wins over the plan, at every profile (its overlays too)
            suites = [_with_fio(s, fio_opts) if s.kind == "fio" else s for s in suites]
        if not fss:
            fss = [plans.FilesystemSpec(name=n) for n in DEFAULT_FS]
        if not suites and not have_jobs:
            suites = [plans.SuiteSpec(kind="fio")]
        changed = any([fs, suite, profile, iterations, seed is not None, mkfs, mnt, fio_opts,
                       adaptive])
        p = p.model_copy(update={"run": p.run.model_copy(update=run), "filesystem": fss,
                                 "suite": suites})
        p.check_unique_variants()
        return p, changed
    specs = [plans.FilesystemSpec(**spec_fields(v)) for v in items] if items else \
        [plans.FilesystemSpec(name=n) for n in DEFAULT_FS]
    refuse_options_for_all(specs, mkfs_options if mkfs else None, mount_options if mnt else None)
    suites = [x.strip() for x in (suite or ("" if have_jobs else "fio")).split(",") if x.strip()]
    return plans.from_cli(specs, suites, profile or "quick", iterations,
                          42 if seed is None else seed, mkfs, mnt, fio_opts, adaptive,
                          with_text=False), True


def _with_replays(p, files, pace: bool):
    """--replay FILE (repeatable) as replay suites; --pace for every replay suite."""
    suites = [*p.suite, *(plans.SuiteSpec(kind="replay", file=str(Path(f).absolute()))
                          for f in files)]
    if pace:
        if not any(s.kind == "replay" for s in suites):
            raise FslabError("--pace paces a replay: give --replay W.replay (fslab capture)")
        suites = [plans.SuiteSpec.model_validate({"kind": s.kind, "workloads": s.workloads,
                                                  **(s.model_extra or {}), "pace": True})
                  if s.kind == "replay" else s for s in suites]
    return p.model_copy(update={"suite": suites})


def _with_fio(s, fio_opts: dict[str, str]):
    """A fio [[suite]] with --fio's options over its own, in its profile overlays too; what
    the user typed runs as typed (`unscaled`): the profile scales the plan's values only."""
    extra = dict(s.model_extra or {})
    extra["fio"] = {**(s.options.get("fio") or {}), **fio_opts}
    extra["unscaled"] = sorted({*(s.options.get("unscaled") or ()), *fio_opts})
    if isinstance(extra.get("profiles"), dict):
        extra["profiles"] = {name: ({**overlay, "fio": {**overlay["fio"], **fio_opts}}
                                    if isinstance(overlay, dict) and "fio" in overlay else overlay)
                             for name, overlay in extra["profiles"].items()}
    return plans.SuiteSpec.model_validate({"kind": s.kind, "workloads": s.workloads, **extra})


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
    if chosen.variant == DEFAULT_VARIANT:
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
