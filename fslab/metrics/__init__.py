"""The metric catalogue: what every metric fslab records means, in one place.

Each suite declares the metrics it emits (fslab/metrics/declared.py, keyed by the suite's
name): a `Metric` says its unit, its better direction, its human label, its role and, for a
count of successes, the metric counting its trials. fio's per-direction metrics are
declared as families (a regular expression its names match in full, with one label rule).
Every consumer asks here: the answer (fslab/metrics/answer.py), tables, plots, the run
summary, recommend, remote, decide. The analysis never asks: callers pass it what it
needs (the trials).

Roles:
  answer      the metric that answers its workload (`answer_rank` orders the candidates)
  throughput  fio's read/write rates: the answer by the workload's access pattern
  outcome     the fate of damaged blocks (integrity): the summary shows them together
  detail      distribution tails and per-clone means: tables show them, headline views not
  unranked    described, never ranked (fio's own CPU and memory, settings, sizes)
  measure     any other metric, ranked by its direction

This package is on the lowest floor (it imports only fslab.records): every layer may ask it,
and print a value with its unit the way every output does (format.py: 172 k ops/s).
"""
from fslab.metrics.model import Catalogue, Metric, Role, default_label
from fslab.metrics.lookup import (better, declared, every, find, floors, is_detail, label,
                                  measure, of, quantity, role, trials)
from fslab.metrics.answer import answer_metric, answer_metrics, job_answer

__all__ = ["Catalogue", "Metric", "Role", "answer_metric", "answer_metrics", "better",
           "declared", "default_label", "every", "find", "floors", "is_detail", "job_answer", "label",
           "measure", "of", "quantity", "role", "trials"]
