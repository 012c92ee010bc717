"""A run's environment as its readers ask it: which implementation a filesystem level ran,
the cache policy, the guest, the tools, what the options probe read, ...

The store keeps the environment as JSON written in several steps (the session's
`run_environment`, each variant's first unit, the options probe, adaptive rounds, job files,
an import, the hosts of a multi-host run); stores of older fslab versions lack some keys.
`RunEnvironment` reads any of them, with the same answer for a missing key as for an empty
one, so no reader indexes the dict by hand (the claims once looked up the ZFS implementation
at the wrong level of it).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import orjson

from fslab import schema

IMPLEMENTATION = " implementation"   # tools["zfs implementation"]: the host-wide label


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class HostLoad:
    """How busy the machine was with other work as the run started (None: not read)."""
    cpu_pressure_avg10: float | None     # % of the 10 s before some task waited for a CPU
    loadavg_1min: float | None


# the host's facts `fslab compare` sets side by side (key as stored, name as printed)
HOST_FACTS = (("kernel", "kernel"), ("os", "OS"), ("cpu_model", "CPU"), ("cpus", "CPUs"),
              ("virtualization", "virtualization"), ("fslab", "fslab"),
              ("page_cache", "page cache"))


@dataclass(frozen=True)
class RunEnvironment:
    data: Mapping[str, Any] = field(default_factory=dict)   # as stored

    @classmethod
    def of(cls, source: "RunEnvironment | Mapping[str, Any] | None") -> "RunEnvironment":
        """From a stored environment dict (or one already typed; None: empty)."""
        if isinstance(source, RunEnvironment):
            return source
        return cls(_dict(source))

    @classmethod
    def of_run(cls, run: Mapping[str, Any] | None) -> "RunEnvironment":
        """From a run row as the store returns it (`store.run(id)`)."""
        return cls.of((run or {}).get("environment"))

    @classmethod
    def from_json(cls, text: str | bytes | None,
                  source: str = "a run's environment") -> "RunEnvironment":
        """From the runs table's JSON column as stored (another store's, read by hand); one
        a newer fslab wrote is refused (`Store.run` refuses it in its own store)."""
        data = orjson.loads(text or "{}")
        schema.check("environment", _dict(data), source)
        return cls.of(data)

    def as_dict(self) -> dict:
        return dict(self.data)

    # --- where and with what ------------------------------------------------------------

    @property
    def hostname(self) -> str:
        return str(self.data.get("hostname") or "")

    @property
    def kernel(self) -> str:
        return str(self.data.get("kernel") or "")

    @property
    def cpus(self) -> int:
        """The host's CPUs (1 when the run did not record them)."""
        return int(self.data.get("cpus") or 1)

    @property
    def memory_total(self) -> int | None:
        """The host's memory in bytes."""
        total = _dict(self.data.get("memory")).get("MemTotal")
        return int(total) if total else None

    def host_facts(self) -> dict[str, object]:
        """{name as printed: value} of the HOST_FACTS this run recorded."""
        return {name: self.data[key] for key, name in HOST_FACTS if key in self.data}

    @property
    def load(self) -> HostLoad | None:
        """The load as the run started (None: recorded before fslab kept it)."""
        load = self.data.get("load")
        if not isinstance(load, dict):
            return None
        loadavg = load.get("loadavg") or [None]
        return HostLoad(_dict(load.get("cpu_pressure_some")).get("avg10"), loadavg[0])

    @property
    def tools(self) -> dict[str, str]:
        return _dict(self.data.get("tools"))

    @property
    def target(self) -> dict:
        """Where the filesystems lived ({"kind": "loop" | "device" | "mountpoint" | ...})."""
        return _dict(self.data.get("target"))

    @property
    def target_kind(self) -> str:
        return str(self.target.get("kind", "loop"))

    @property
    def profile(self) -> dict:
        return _dict(self.data.get("profile"))

    @property
    def profile_name(self) -> str | None:
        return self.profile.get("name") or None

    @property
    def profile_scaled(self) -> bool:
        return bool(self.profile.get("scaled"))

    @property
    def guest(self) -> dict:
        """The qemu guest a run was measured in ({} when it ran on this host)."""
        return _dict(self.data.get("guest"))

    @property
    def emulated(self) -> bool:
        """Measured in a guest under software emulation (TCG): absolute speed says nothing."""
        return bool(self.guest.get("emulated"))

    @property
    def multihost(self) -> dict:
        return _dict(self.data.get("multihost"))

    @property
    def hosts(self) -> list[str]:
        """The hosts of a multi-host run, in the order the run listed them."""
        return list(_dict(self.multihost.get("hosts")))

    @property
    def hosts_toml(self) -> str | None:
        """The hosts file a multi-host run started with (a resumed run uses it again)."""
        return self.multihost.get("hosts_toml") or None

    # --- filesystems ----------------------------------------------------------------------

    @property
    def filesystems(self) -> dict[str, dict]:
        """Per filesystem level ('zfs:dedup'): what its first unit made (options in effect,
        implementation, cache policy, serving daemon)."""
        return {k: _dict(v) for k, v in _dict(self.data.get("filesystems")).items()}

    def in_effect(self, fs_label: str) -> dict:
        """What a level's first unit read back of its options and implementation."""
        return _dict(self.filesystems.get(fs_label, {}).get("in_effect"))

    @property
    def options_probe(self) -> dict[str, dict]:
        """What the options probe read of each variant with options, before the run."""
        return {k: _dict(v) for k, v in _dict(self.data.get("options_probe")).items()}

    def probed_in_effect(self, fs_label: str) -> dict:
        return _dict(self.options_probe.get(fs_label, {}).get("in_effect"))

    def implementation(self, fs_label: str) -> str:
        """The implementation label a level ran ('zfs-fuse 0.7.0 (FUSE daemon)'): the level's
        own record when it has one, else the host's tool for its filesystem; '' when the run
        did not record one."""
        own = self.in_effect(fs_label)
        if own.get("implementation"):
            return str(own.get("implementation_label") or own["implementation"])
        name = fs_label.split(":", 1)[0]
        return str(self.tools.get(f"{name}{IMPLEMENTATION}") or "")

    def recorded_implementations(self) -> dict[str, str]:
        """{level: implementation} as each level recorded it when mounted."""
        return {label: str(fs["in_effect"]["implementation"])
                for label, fs in self.filesystems.items()
                if _dict(fs.get("in_effect")).get("implementation")}

    def host_implementations(self) -> dict[str, str]:
        """{filesystem: implementation label} among the host's tools ('zfs': 'OpenZFS ...')."""
        return {k[:-len(IMPLEMENTATION)]: str(v) for k, v in sorted(self.tools.items())
                if k.endswith(IMPLEMENTATION)}

    # --- caching --------------------------------------------------------------------------

    @property
    def page_cache(self) -> str | None:
        """The run's page-cache policy for fslab's own workloads ('off' | 'on'); None for
        runs from before the policy existed (buffered, unknown)."""
        policy = self.data.get("page_cache")
        return str(policy) if policy is not None else None

    # --- how each unit started -----------------------------------------------------------

    @property
    def unit_setup(self) -> dict:
        """{"settle": bool, "design": "sliced" | "units", "slice_ms": int, "image": "fresh" |
        "reused", "loop_direct_io": bool} ({} for runs from before fslab recorded it: a
        fresh image per unit, unsettled, one unit per candidate)."""
        return _dict(self.data.get("units"))

    def unit_setup_note(self) -> str:
        """The answer header's words for it ('' when not recorded)."""
        u = self.unit_setup
        if not u:
            return ""
        parts = []
        if u.get("design") == "sliced":
            slices = sorted({str(w["design"]) for w in self.workloads.values()
                             if str(w.get("design", "")).startswith("interleaved")})
            if slices:   # which cases ran so: the fio suite's time-based ones
                parts.append("each round's fio case in one fio process, its filesystems "
                             "taking turns in " + " / ".join(slices))
        if u.get("image") == "reused":
            parts.append("every unit on one loop image written before the run")
        elif u.get("image") == "fresh":
            parts.append("a new sparse loop image per unit")
        if u.get("loop_direct_io") is False:
            parts.append("loop device buffered")
        parts.append("writeback drained and caches dropped before each unit" if u.get("settle")
                     else "units not settled")
        return ", ".join(parts)

    def cache_policy(self, fs_label: str) -> str | None:
        """What the policy could do on one level ('direct I/O (O_DIRECT)', ...)."""
        return self.filesystems.get(fs_label, {}).get("cache_policy") or None

    def daemon(self, fs_label: str) -> str | None:
        """The user-space process that did a level's work (zfs-fuse), if any."""
        return self.filesystems.get(fs_label, {}).get("daemon") or None

    @property
    def daemons(self) -> list[str]:
        return sorted({d for label in self.filesystems if (d := self.daemon(label))})

    @property
    def workloads(self) -> dict[str, dict]:
        """Per suite:case: what the suite said of its input and the page cache, in its own
        words (page_cache, buffered, stand_in, ...; fslab/workloads/base.py)."""
        return {k: v for k, v in _dict(self.data.get("workloads")).items() if isinstance(v, dict)}

    @property
    def job_files(self) -> dict[str, dict]:
        """Per job file (a case): where it came from and how its jobs ran (their own I/O)."""
        return {k: _dict(v) for k, v in _dict(self.data.get("job_files")).items()}

    # --- rounds ---------------------------------------------------------------------------

    @property
    def decide(self) -> "DecideState":
        """What `fslab decide` keeps of its race (empty for any other run)."""
        return DecideState.of(_dict(self.data.get("decide")))

    @property
    def adaptive(self) -> dict | None:
        """What adaptive rounds did (None when the run did not use them)."""
        value = self.data.get("adaptive")
        return value if isinstance(value, dict) else None


# What a decide stored before it kept its --stages: it was a decide of one stage.
STAGES_BEFORE_THE_KEY = 1
# What a decide stored before it kept its --max-candidates: the CLI's default then and now.
MAX_CANDIDATES_BEFORE_THE_KEY = 40


@dataclass(frozen=True)
class StoredStage:
    """A later stage of a decide as it began (so --resume runs it as it was)."""
    kind: str
    first_round: int          # the last round of the stages before it (its rounds follow)
    plan: str                 # the stage's plan TOML
    probed: dict[str, dict]   # what the options probe read of its candidates
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "first_round": self.first_round, "plan": self.plan,
                "probed": self.probed, "why": self.why}


@dataclass(frozen=True)
class DecideState:
    """The environment's "decide" section: the decide's own settings (for --resume), each
    later stage as it began, where a stage's race stopped for the budget or its noise (a
    stage by the round before its first: 0 for the first), and the decision as stored (its
    JSON: fslab.decide.result reads it). The keys are named here only; writers take the
    patches below to Store.update_environment."""
    data: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, section: Mapping[str, Any]) -> "DecideState":
        return cls(section)

    @property
    def max_stages(self) -> int:
        return int(self.data.get("max_stages") or STAGES_BEFORE_THE_KEY)

    @property
    def max_candidates(self) -> int:
        return int(self.data.get("max_candidates") or MAX_CANDIDATES_BEFORE_THE_KEY)

    @property
    def stages(self) -> list[StoredStage]:
        return [StoredStage(s["kind"], int(s["first_round"]), s["plan"],
                            _dict(s.get("probed")), s.get("why", ""))
                for s in self.data.get("stages") or []]

    @property
    def decision(self) -> dict | None:
        """The decision's JSON as stored (None: the decide has not finished)."""
        return _dict(self.data.get("decision")) or None

    def budget_stop_after(self, first: int) -> int | None:
        """The round after which the stage from `first` stopped for the --budget."""
        value = self.data.get(_stop_key("budget", first))
        return None if value is None else int(value)

    def noise_stop_after(self, first: int) -> int | None:
        """The round after which the stage from `first` stopped: too noisy for --delta."""
        value = self.data.get(_stop_key("noise", first))
        return None if value is None else int(value)

    def noise_why(self, first: int) -> str:
        return str(self.data.get(_stop_key("noise", first) + "_why") or "")

    # --- what a decide writes (patches of Store.update_environment) ----------------------

    @staticmethod
    def settings_patch(max_stages: int, max_candidates: int) -> dict:
        return {"decide": {"max_stages": max_stages, "max_candidates": max_candidates}}

    @staticmethod
    def budget_stop_patch(first: int, after: int) -> dict:
        return {"decide": {_stop_key("budget", first): after}}

    @staticmethod
    def noise_stop_patch(first: int, after: int, why: str) -> dict:
        return {"decide": {_stop_key("noise", first): after, _stop_key("noise", first) + "_why": why}}

    @staticmethod
    def stages_patch(stages: list[StoredStage]) -> dict:
        return {"decide": {"stages": [s.to_json() for s in stages]}}

    @staticmethod
    def decision_patch(decision: dict) -> dict:
        return {"decide": {"decision": decision}}


def _stop_key(why: str, first: int) -> str:
    """Where a stage's stop is kept (the first stage's key is the one-stage race's)."""
    return f"{why}_stop_after" if not first else f"{why}_stop_after_{first}"


def environments_of(runs: Iterable[Mapping[str, Any]]) -> dict[str, RunEnvironment]:
    """{run id: its environment, typed}, in the runs' order: each parsed once."""
    return {str(r.get("run_id", "")): RunEnvironment.of_run(r) for r in runs}
