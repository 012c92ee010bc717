"""The candidates a decide races: each filesystem at its defaults, and each value of its
driver's option catalogue varied alone from those defaults (one factor at a time), or the
user's own list (`--candidates FILE`: [[candidate]] tables with the keys of a plan's
[[filesystem]]).

One factor at a time keeps the set bounded (a catalogue has 3-27 values per filesystem)
and says which option helped; the ones that helped are combined in a later stage
(fslab/decide/combine.py, fslab/decide/stages.py, docs/decide.md). `safe`
values only unless trades are allowed (`--allow trade`): a trade's candidate carries
what it gives up, and the answer says so.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from fslab import filesystems
from fslab.errors import FslabError
from fslab.plan import FilesystemSpec, validation_error

MAX_CANDIDATES = 40


@dataclass
class Candidate:
    spec: FilesystemSpec
    safety: str = "safe"                 # safe | trade | unknown (options outside the catalogue)
    trades: str = ""                     # what a trade gives up, in words
    changed: str = "defaults"            # the option it varies, as typed
    why: str = ""                        # the catalogue's note on what it changes
    origin: str = ""                     # "catalogue": one of its values (or defaults)
    unknown: str = ""                    # the options fslab's catalogue does not list, said so

    @property
    def label(self) -> str:
        return self.spec.label

    def as_dict(self) -> dict[str, str]:
        """What a decide's plan keeps of it (STORED), beside its filesystem spec."""
        return {"label": self.label, "fs": self.spec.name, "changed": self.changed,
                "safety": self.safety, "trades": self.trades, "effect": self.why,
                "origin": self.origin, "unknown": self.unknown}


STORED = ("safety", "trades", "changed", "effect", "origin", "unknown")


@dataclass
class CandidateSet:
    candidates: list[Candidate]
    left_out: list[str] = field(default_factory=list)   # one line each: why not raced


def variant_name(value: str) -> str:
    """'recordsize=8k' -> 'recordsize-8k', '-I 512' -> 'I512', '-O ^has_journal' -> 'O-no-has_journal'."""
    name = value.replace("^", "no-").replace("=", "-").replace(",", "-")
    name = re.sub(r"\s+", "", name.lstrip("-"))
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", name) or "option"


def from_catalogue(fs_names: list[str], allow: set[str], keys: set[str] | None = None,
                   limit: int = MAX_CANDIDATES) -> CandidateSet:
    out, left = [], []
    for name in fs_names:
        driver = filesystems.get(name)
        out.append(Candidate(FilesystemSpec(name=name), changed="defaults", origin="catalogue"))
        seen: set[str] = set()
        for option in driver.option_catalogue():
            if keys and option.key not in keys:
                continue
            for value in option.values:
                if option.safety not in allow:
                    left.append(f"{name} {value}: a trade ({option.trades}); --allow trade races it")
                    continue
                variant = variant_name(value)
                while variant in seen:
                    variant += "_"
                seen.add(variant)
                spec = FilesystemSpec(name=name, variant=variant, **option.spec_fields(value))
                out.append(Candidate(spec, option.safety, option.trades, value, option.effect,
                                     "catalogue"))
    if keys:
        known = {o.key for n in fs_names for o in filesystems.get(n).option_catalogue()}
        if keys - known:
            raise FslabError(f"--options {','.join(sorted(keys - known))}: not in the catalogue of "
                             f"{', '.join(fs_names)} (fslab options {' '.join(fs_names)} lists it)")
    if len(out) > limit and len(fs_names) > 1 and not keys:
        # several filesystems whose catalogues are too many together: screen the
        # filesystems first, at their defaults; the winner's own catalogue is a race of its own
        return CandidateSet([c for c in out if c.changed == "defaults"], [
            f"their options: {len(out)} candidates (the catalogues of {', '.join(fs_names)}, one "
            f"option at a time) is more than --max-candidates {limit}, so the filesystems race "
            "at their defaults first, and the winner's options in the next stage (unless "
            "--stages 1; or narrow with --options KEY,..., or raise --max-candidates)"])
    if len(out) > limit:
        raise FslabError(f"{len(out)} candidates (the catalogue of {', '.join(fs_names)}, one option "
                         f"at a time) is more than --max-candidates {limit}: narrow with --options "
                         "KEY,... (fslab options lists the keys) or fewer --fs, or raise the limit")
    return CandidateSet(out, left)


def from_file(path: Path, allow: set[str]) -> CandidateSet:
    """[[candidate]] tables: the [[filesystem]] keys, plus safety = "trade" and trades =
    "..." for a candidate that gives something up."""
    try:
        text = path.read_text()
        data = tomllib.loads(text)
    except OSError as e:
        raise FslabError(f"cannot read candidates {path}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise FslabError(f"{path}: invalid TOML: {e}") from None
    tables = data.get("candidate")
    if not isinstance(tables, list) or not tables:
        raise FslabError(f"{path}: no [[candidate]] tables (each with the keys of a plan's "
                         "[[filesystem]]: name, variant, mkfs_options, mount_options, properties)")
    out, left, seen = [], [], set()
    for i, t in enumerate(tables):
        t = dict(t)
        safety, trades = t.pop("safety", "safe"), t.pop("trades", "")
        if safety not in ("safe", "trade"):
            raise FslabError(f"{path}: candidate {i + 1}: safety must be 'safe' or 'trade'")
        try:
            spec = FilesystemSpec.model_validate(t)
        except ValidationError as e:
            raise validation_error(e, text, str(path), ("candidate", i)) from None
        if spec.label in seen:
            raise FslabError(f"{path}: candidate {spec.label} appears twice; give each a variant name")
        seen.add(spec.label)
        filesystems.get(spec.name)     # an unknown filesystem is an input error, here
        if (why := conflicting(spec)):
            raise FslabError(f"{path}: {why}")
        c = Candidate(spec, safety, trades, _changed(spec), unknown=classify(spec)[2])
        if safety not in allow:
            left.append(f"{spec.label}: a trade ({trades or 'said so in the file'}); --allow trade races it")
            continue
        out.append(c)
    if len(out) < 2:
        raise FslabError(f"{path}: fewer than 2 candidates to race")
    return CandidateSet(out, left)


def classify(spec: FilesystemSpec) -> tuple[str, str, str]:
    """(safety, trades, the options it does not know) of a variant's options, from its
    driver's catalogue:
    a value the catalogue marks as a trade makes the variant one; a value it does not list
    is unknown to fslab: the variant's safety is "unknown" (never called safe), said as
    such, and raced as the user's choice."""
    driver = filesystems.get(spec.name)
    trades, unknown = [], []
    asked = ([("mount", o) for o in spec.mount_options] + [("mkfs", w) for w in spec.mkfs_options]
             + [("property", f"{k}={v}") for k, v in spec.properties.items()]
             + [("pool_property", f"{k}={v}") for k, v in spec.pool_properties.items()])
    for kind, value in asked:
        hit = next((o for o in driver.catalogue if o.kind == kind and (
            value in o.values or any(value in v.split() for v in o.values))), None)
        if hit is None:
            unknown.append(value)
        elif hit.safety == "trade":
            trades.append(f"{value}: {hit.trades}")
    effect = "; ".join(f"{v}: not in fslab's catalogue (what it costs is unknown)" for v in unknown)
    return ("trade" if trades else "unknown" if unknown else "safe"), "; ".join(trades), effect


def conflicting(spec: FilesystemSpec) -> str | None:
    """Why one candidate sets an option against itself (one mount option key given two
    values, `-o logbufs=2,logbufs=8`: the kernel keeps the last, so the label would say
    what did not run), else None."""
    values: dict[str, list[str]] = {}
    for o in spec.mount_options:
        for part in (p.strip() for p in o.split(",")):
            key, eq, _ = part.partition("=")
            if eq:
                values.setdefault(key, []).append(part)
    clash = next((v for v in values.values() if len(set(v)) > 1), None)
    if clash is None:
        return None
    return (f"{spec.label}: mount options {' and '.join(dict.fromkeys(clash))} set "
            f"{clash[0].partition('=')[0]} twice (the kernel keeps the last): give one value")


def named(specs: list[FilesystemSpec], allow: set[str]) -> CandidateSet:
    """Exactly the variants the user named (--fs NAME:VARIANT[...]), classed by the catalogue."""
    out, left = [], []
    for spec in specs:
        if (why := conflicting(spec)):
            raise FslabError(why)
        safety, trades, unknown = classify(spec)
        c = Candidate(spec, safety, trades, _changed(spec), unknown=unknown)
        if safety == "trade" and safety not in allow:     # an unknown one: the user named it
            left.append(f"{spec.label}: a trade ({trades}); --allow trade races it")
            continue
        out.append(c)
    return CandidateSet(out, left)


def _changed(spec: FilesystemSpec) -> str:
    return spec.options_text


def small_image_hint(why: str, size_bytes: int) -> str:
    """What to add where mkfs refused an option for the image's size (mkfs.xfs `-d
    agcount=8` on a smoke image: "Log size must be at least 64MB"): the profile's image
    is too small for it, not the option wrong."""
    if not re.search(r"too small|must be at least|at least \d+\s*[KMG]|minimum size|"
                     r"too many allocation groups|not enough space", why, re.I):
        return ""
    return (f" (on this profile's {size_bytes >> 20} MiB image, the size its units use: "
            "a larger --image-size or --profile may take it)")
