"""Questions to the catalogue: a metric's label, role, direction, quantity, trials, floor."""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable, Iterable, TypeVar

from fslab.metrics.declared import EARLIER, SUITES
from fslab.metrics.model import Catalogue, Metric, Role, default_label
from fslab.records import Better, Measurement

T = TypeVar("T")


def _merged(*catalogues: Catalogue) -> Catalogue:
    return Catalogue(m for c in catalogues for m in c.metrics)


@lru_cache(maxsize=None)
def declared(suite: str) -> Catalogue | None:
    """The metrics a suite declares (None for a suite fslab does not know)."""
    metrics = SUITES.get(suite)
    return Catalogue(metrics) if metrics is not None else None


@lru_cache(maxsize=None)
def every() -> Catalogue:
    """Every suite's metrics and the names earlier versions recorded: for a metric whose
    suite is not known (imported files, old stores, a view across suites)."""
    return Catalogue([m for ms in SUITES.values() for m in ms] + list(EARLIER))


@lru_cache(maxsize=None)
def of(suite: str | None) -> Catalogue:
    """A suite's own metrics, then every other known one (a record of a suite that did not
    declare its metric, e.g. an older store's, is still said and answered as before)."""
    own = declared(suite) if suite else None
    return _merged(own, every()) if own else every()


def find(metric: str, suite: str | None = None) -> Metric | None:
    return of(suite).find(metric)


def label(metric: str, suite: str | None = None) -> str:
    """What people call a metric: read_iops -> 'read IOPS', write_clat_p99 -> 'p99 write
    latency'; a metric the catalogue does not know, as stored with spaces."""
    m = find(metric, suite)
    return m.label_of(metric) if m else default_label(metric)


def role(metric: str, suite: str | None = None) -> Role | None:
    m = find(metric, suite)
    return m.kind if m else None


def is_detail(metric: str, suite: str | None = None) -> bool:
    """A distribution's tails (*_min, *_max, *_pNN) or a job's per-clone mean: tables show
    it, the headline views (terminal, first screen, generic plots) leave it out."""
    return role(metric, suite) == "detail"


def better(metric: str, suite: str | None = None) -> Better:
    m = find(metric, suite)
    return m.better if m else None


def quantity(metric: str, suite: str | None = None) -> str:
    """The measure a metric states ('read_iops' and 'write_bw' -> 'throughput')."""
    m = find(metric, suite)
    return m.quantity_of(metric) if m else metric


def trials(suites: Iterable[str]) -> dict[str, str]:
    """{metric: the metric counting its trials}, as these suites declare them."""
    return _of_suites(suites, Catalogue.trials)


def floors(suites: Iterable[str]) -> dict[str, float]:
    """{metric: the value below which it is none of it}, as these suites declare them."""
    return _of_suites(suites, Catalogue.floors)


def _of_suites(suites: Iterable[str], part: Callable[[Catalogue], dict[str, T]]) -> dict[str, T]:
    out: dict[str, T] = {}
    for s in sorted(set(suites)):
        c = declared(s)
        if c:
            out.update(part(c))
    return out


def measure(suite: str, metric: str, value: float, artifact: str | None = None,
            **kw: Any) -> Measurement:
    """A Measurement of a metric `suite` declares (unit and direction from its declaration)."""
    cat = declared(suite)
    if cat is None or metric not in cat:
        raise KeyError(f"suite {suite!r} declares no metric {metric!r} (fslab/metrics/declared.py)")
    return cat.measure(metric, value, artifact, **kw)
