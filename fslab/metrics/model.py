"""The catalogue's model: a Metric and a Catalogue of them (see fslab/metrics/__init__.py)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable, Iterator, Literal

from fslab.records import Better, Measurement

Role = Literal["answer", "throughput", "outcome", "detail", "unranked", "measure"]
_NAME = re.compile(r"[a-z0-9_]+")


@dataclass(frozen=True)
class Metric:
    """A metric a suite records. `key` is its name, or for a family a regular expression
    its names match in full; `label` is what people call it (a family's: a function of the
    match); `quantity` the measure it states, where several metrics state one (recommend
    counts one vote per measure; a family's may use the match's groups, \\1); `trials`, for
    a count of successes, the metric of the same unit counting its trials (`silent` blocks
    out of `damaged` ones: the analysis pools them, fslab/analysis/counts.py);
    `answer_rank`, for a metric that can answer its workload, its place among the
    candidates (lower first, see fslab/metrics/answer.py); `answer_with`, a metric said
    beside it in the answer (an application's p99 latency beside its rate)."""
    key: str
    unit: str
    better: Better = None
    role: Role | None = None          # None: "measure" when ranked, else "unranked"
    label: str | Callable[[re.Match], str] = ""
    trials: str | None = None
    quantity: str = ""
    answer_rank: int | None = None
    answer_with: str | None = None
    # below this (in its unit) a value is none of it: where every level's median is below,
    # the metric is described, not ranked (0.2 B written per transaction against 0 B is a
    # difference a test may find and nobody could use)
    floor: float | None = None

    @property
    def family(self) -> bool:
        return not _NAME.fullmatch(self.key)

    @property
    def kind(self) -> Role:
        if self.role:
            return self.role
        return "measure" if self.better else "unranked"

    def match(self, name: str) -> re.Match | None:
        return _pattern(self.key).fullmatch(name)

    def label_of(self, name: str) -> str:
        if callable(self.label):
            m = self.match(name)
            return self.label(m) if m else default_label(name)
        return self.label or default_label(name)

    def quantity_of(self, name: str) -> str:
        if not self.quantity:
            return name
        m = self.match(name)
        return m.expand(self.quantity) if m else self.quantity

    def measure(self, value: float, artifact: str | None = None, *, name: str | None = None,
                ranked: bool = True, case: str | None = None,
                params: dict | None = None) -> Measurement:
        """A Measurement of this metric (a family's: of `name`); `ranked=False` records a
        value the suite knows to be unfit for ranking this time (a run too short to time)."""
        return Measurement(name or self.key, float(value), self.unit,
                           self.better if ranked else None, artifact, case, params or {})


@lru_cache(maxsize=None)
def _pattern(key: str) -> re.Pattern:
    return re.compile(key)


def default_label(name: str) -> str:
    """A metric without a label of its own is said as stored, with spaces."""
    return name.replace("_", " ")


class Catalogue:
    """The metrics of one suite (or of all): exact names first, then families in order."""

    def __init__(self, metrics: Iterable[Metric]):
        self.metrics = tuple(metrics)
        self._exact: dict[str, Metric] = {}
        for m in self.metrics:
            if not m.family:
                self._exact.setdefault(m.key, m)
        self._families = [m for m in self.metrics if m.family]
        self._found: dict[str, Metric | None] = {}

    def find(self, name: str) -> Metric | None:
        if name not in self._found:
            self._found[name] = self._exact.get(name) or next(
                (m for m in self._families if m.match(name)), None)
        return self._found[name]

    def __iter__(self) -> Iterator[Metric]:
        return iter(self.metrics)

    def __contains__(self, name: str) -> bool:
        return self.find(name) is not None

    def names(self, role: Role) -> tuple[str, ...]:
        """The exact names of this role, in the order they are declared."""
        return tuple(dict.fromkeys(m.key for m in self.metrics if not m.family and m.kind == role))

    def trials(self) -> dict[str, str]:
        return {m.key: m.trials for m in self.metrics if m.trials}

    def floors(self) -> dict[str, float]:
        return {m.key: m.floor for m in self.metrics if m.floor is not None and not m.family}

    def measure(self, name: str, value: float, artifact: str | None = None, *,
                ranked: bool = True, case: str | None = None,
                params: dict | None = None) -> Measurement:
        """A Measurement of the metric `name` with the unit and direction declared here: a
        suite emits through its declaration, so a name it did not declare is an error, not a
        record without meaning."""
        m = self.find(name)
        if m is None:
            raise KeyError(f"no metric {name!r} is declared here (fslab/metrics/declared.py)")
        return m.measure(value, artifact, name=name, ranked=ranked, case=case, params=params)
