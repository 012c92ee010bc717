"""The combination stage's rule: which options of a one-at-a-time race are combined.

An option "helped" when its candidate was not eliminated and the 95% interval of its
geometric-mean ratio to its filesystem's defaults, within the rounds both ran (the
paired t on the within-round log ratios), lies wholly on the better side of 1: its gain
is beyond the stage's noise. (A point estimate above 1 combined noise: XFS `largeio`,
which changes only stat()'s preferred size, "+69.5%", `logbufs=4` "+49.4%"; issue 36.)
It is still a screening rule, not a claim: stage 1's data chose the options, so they say
nothing about the combination; only the next stage's fresh rounds do (docs/decide.md). Among the helpers, one value per catalogue key (the better one), and
of two keys the catalogue marks as conflicting (Option.conflicts) the better one; two
or more left make one combined candidate per filesystem. mkfs or mount refusing the
combination is the probe's to say: then the weakest of the options its refusal names goes
and the rest is tried, while two are left (fslab/decide/stages.py).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from fslab import filesystems
from fslab.decide.candidates import Candidate
from fslab.filesystems.base import Option
from fslab.plan import FilesystemSpec

COMBINED = "combined"


@dataclass
class Helped:
    label: str
    key: str
    value: str
    ratio: float          # the option's candidate / its defaults, within rounds (point estimate)
    low: float | None = None    # its 95% interval's end nearer no gain (None: not known)


@dataclass
class Combination:
    fs: str
    helped: list[Helped] = field(default_factory=list)     # what goes in, best first
    dropped: list[str] = field(default_factory=list)       # helpers left out, one line each
    candidate: Candidate | None = None                    # None: fewer than two helped
    by_interval: bool = True     # the rule: the interval beyond no gain (else the point)

    def weaker(self, refusal: str = "") -> "Combination":
        """The same without one option: the weakest of those the refusal names (mkfs's or
        mount's command line is in it: a mount option stays when mkfs refused), else the
        weakest of all."""
        words = re.split(r"[\s,]+", refusal)
        named = [h for h in self.helped if _names(words, h.value.split())] or self.helped
        out = Combination(self.fs, [h for h in self.helped if h is not named[-1]], list(self.dropped),
                          by_interval=self.by_interval)
        if len(out.helped) >= 2:
            out.candidate = _candidate(self.fs, [(h, option_of(self.fs, h.value)) for h in out.helped])
        return out

    def summary(self) -> str:
        ins = ", ".join(f"{h.value} ({_pct(h.ratio)}"
                        + (f", at least {_pct(h.low)}" if h.low is not None else "") + ")"
                        for h in self.helped)
        rule = ("its 95% interval beyond no gain" if self.by_interval else
                "ahead by its point estimate")
        if self.candidate is None:
            return (f"{self.fs}: no option beat its defaults beyond the stage's noise (not "
                    f"eliminated, {rule}): nothing to combine" if not self.helped else
                    f"{self.fs}: only {ins} beat its defaults ({rule}): nothing to combine")
        return (f"{self.fs}: combined {ins} (each ahead of the defaults in the one-at-a-time "
                f"stage, {rule}, not eliminated)" + "".join(f"; {d}" for d in self.dropped))


def _names(words: list[str], option: list[str]) -> bool:
    """`option`'s words stand together in `words` (btrfs `ssd` is not in `nossd`)."""
    k = len(option)
    return any(words[i:i + k] == option for i in range(len(words) - k + 1))


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%"


def option_of(fs: str, value: str) -> Option | None:
    """The catalogue entry a value belongs to (None: not the catalogue's)."""
    return next((o for o in filesystems.get(fs).option_catalogue() if value in o.values), None)


def combine(fs: str, ratios: dict[str, float], candidates: dict[str, dict], better: str,
            eliminated: set[str], intervals: dict[str, tuple[float, float]] | None = None
            ) -> Combination:
    """`ratios`: label -> its ratio to `fs`'s defaults (within rounds); `intervals`: label
    -> that ratio's 95% interval (a decide always gives them; without, the point estimate
    is the rule); `candidates`: label -> the race's record of it (its "changed" value, "fs")."""
    out = Combination(fs, by_interval=intervals is not None)
    sign = 1 if better == "higher" else -1
    best: dict[str, tuple[Helped, Option]] = {}
    for label, ratio in ratios.items():
        info = candidates.get(label) or {}
        value = info.get("changed", "")
        if info.get("fs", fs) != fs or value in ("", "defaults") or label in eliminated:
            continue
        if not math.isfinite(ratio) or sign * math.log(ratio) <= 0:
            continue
        low = None
        if intervals is not None:
            lo, hi = intervals.get(label, (math.nan, math.nan))
            low = lo if sign > 0 else hi
            if not (math.isfinite(low) and low > 0 and sign * math.log(low) > 0):
                continue          # its gain is within the stage's noise
        option = option_of(fs, value)
        if option is None:
            continue
        h = Helped(label, option.key, value, ratio, low)
        held = best.get(option.key)
        if held is None or sign * math.log(ratio) > sign * math.log(held[0].ratio):
            if held is not None:
                out.dropped.append(f"{held[0].value} left out: {value} of the same key did better")
            best[option.key] = (h, option)
        else:
            out.dropped.append(f"{value} left out: {held[0].value} of the same key did better")
    ranked = sorted(best.values(), key=lambda t: -sign * math.log(t[0].ratio))
    chosen: list[tuple[Helped, Option]] = []
    for h, option in ranked:
        clash = next((c for c, o in chosen if h.key in o.conflicts or c.key in option.conflicts), None)
        if clash:
            out.dropped.append(f"{h.value} left out: the catalogue says it does not go with "
                               f"{clash.value}")
            continue
        chosen.append((h, option))
    out.helped = [h for h, _ in chosen]
    if len(chosen) >= 2:
        out.candidate = _candidate(fs, chosen)
    return out


def _candidate(fs: str, chosen: list) -> Candidate:
    fields: dict = {"mkfs_options": [], "mount_options": [], "properties": {}, "pool_properties": {}}
    for h, option in chosen:
        for k, v in option.spec_fields(h.value).items():
            if isinstance(v, list):
                fields[k] += v
            else:
                fields[k].update(v)
    spec = FilesystemSpec(name=fs, variant=COMBINED, **{k: v for k, v in fields.items() if v})
    trades = [f"{h.value}: {o.trades}" for h, o in chosen if o.safety == "trade"]
    return Candidate(spec, "trade" if trades else "safe", "; ".join(trades),
                     " + ".join(h.value for h, _ in chosen),
                     "the options that beat the defaults one at a time, together")
