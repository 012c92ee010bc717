"""Counts of trials compared pooled over rounds (fslab/analysis/counts.py), checked against scipy.

Issue 26 item 4: the integrity suite stores one count per unit (8 damaged blocks, 8 returned
silently), and comparing one count per round said "~ (n too small)" for ext4 (8 of 8 flips
returned silently) against zfs (8 of 8 caught). Every damaged block is a trial."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fslab.analysis import analyze
from fslab.analysis.counts import (COUNT_COLUMNS, DESIGN, MAX_BOSCHLOO_TABLES, Pooled, compare_counts,
                                   pair_p_value, smallest_p)
from fslab.analysis.pairwise import PAIR_COLUMNS, compare_levels, holm
from fslab.records import RECORD_COLUMNS
from fslab.report.verdicts import ranking_line

TRIALS = {"silent": "damaged", "detected": "damaged"}


def _records(counts: dict[str, list[tuple[int, int]]], metric: str = "silent",
             better: str | None = "lower") -> pd.DataFrame:
    """One integrity-like unit per (fs, round): `damaged` and `metric` = k of them."""
    rows = []
    for fs, rounds in counts.items():
        for it, (k, n) in enumerate(rounds, start=1):
            for name, value, direction in (("damaged", n, None), (metric, k, better)):
                rows.append({"run_id": "r", "host": "h", "fs": fs, "variant": "default",
                             "suite": "integrity", "case": "data", "params": "{}", "iteration": it,
                             "metric": name, "value": float(value), "unit": "count",
                             "better": direction, "artifact": None, "ts": 0.0})
    return pd.DataFrame(rows, columns=RECORD_COLUMNS)


def test_eight_of_eight_against_none_in_one_round_is_exact_and_small():
    """The issue's numbers: Fisher's p for 8/8 vs 0/8 is 1.6e-4; Boschloo's (used here)
    is scipy's own and smaller (uniformly more powerful at equal trial totals)."""
    table = [[8, 0], [0, 8]]
    fisher = stats.fisher_exact(table).pvalue
    assert fisher == pytest.approx(1.6e-4, rel=0.03)
    p = pair_p_value(8, 8, 0, 8)
    assert p == pytest.approx(stats.boschloo_exact(table).pvalue, rel=1e-9)
    assert p < fisher


@pytest.mark.parametrize("k_a,n_a,k_b,n_b", [(6, 8, 0, 8), (3, 16, 9, 16), (5, 24, 1, 8)])
def test_pooled_p_is_scipys_on_the_pooled_table(k_a, n_a, k_b, n_b):
    table = [[k_a, k_b], [n_a - k_a, n_b - k_b]]
    assert pair_p_value(k_a, n_a, k_b, n_b) == pytest.approx(stats.boschloo_exact(table).pvalue,
                                                              rel=1e-9)


def test_large_totals_use_fisher():
    """Beyond MAX_BOSCHLOO_TABLES (Boschloo takes seconds there) the test is Fisher's."""
    n = 120
    assert (n + 1) ** 2 > MAX_BOSCHLOO_TABLES
    assert pair_p_value(40, n, 25, n) == pytest.approx(
        stats.fisher_exact([[40, 25], [n - 40, n - 25]]).pvalue, rel=1e-9)
    rows = compare_counts(Pooled("damaged", {"a": (40, n), "b": (25, n)}), "lower", ["a", "b"])
    assert rows[0].test.startswith("Fisher exact test on the damaged")


@pytest.mark.parametrize("n_a,n_b", [(3, 5), (4, 4), (2, 7)])
def test_smallest_p_is_the_smallest_any_outcome_gives(n_a, n_b):
    """So a 'cannot show a difference (smallest p=...)' note is true."""
    every = [pair_p_value(k_a, n_a, k_b, n_b) for k_a in range(n_a + 1) for k_b in range(n_b + 1)]
    assert smallest_p(n_a, n_b) == pytest.approx(min(every), rel=1e-9)


def test_rows_have_the_columns_of_the_round_tests_and_mean_rates():
    pooled = Pooled("damaged", {"ext4": (8, 8), "xfs": (8, 8), "zfs": (0, 8)})
    rows = compare_counts(pooled, "lower", ["ext4", "xfs", "zfs"])
    rng = np.random.default_rng(0)
    samples = {lv: (rng.normal(size=5), np.arange(5)) for lv in ("ext4", "xfs", "zfs")}
    assert type(rows[0]) is type(compare_levels(samples, "lower", True)[0])
    assert set(COUNT_COLUMNS) == set(PAIR_COLUMNS) == set(rows[0].columns())
    by_pair = {(r.baseline, r.other): r for r in rows}
    r = by_pair[("ext4", "zfs")]
    assert (r.n_baseline, r.n_other, r.median_baseline, r.median_other) == (8, 8, 1.0, 0.0)
    assert r.delta == -1.0 and r.ratio == 0.0 and math.isnan(r.ratio_ci_lo)
    assert r.design == DESIGN and r.paired is False
    # Holm over the 3 pairs of the group, as pairwise.py adjusts the round tests
    assert [x.p_holm for x in rows] == pytest.approx(list(holm([x.p for x in rows])))
    assert r.p_holm == pytest.approx(3 * r.p)      # two pairs share the smallest p
    assert r.significant and r.winner == "zfs"
    assert r.verdict.startswith("100% → 0% of damaged (p<0.001")
    same = by_pair[("ext4", "xfs")]
    assert same.p == 1.0 and not same.significant and same.verdict == "~"
    (flipped,) = compare_counts(pooled, "lower", ["zfs", "ext4"])    # a baseline rate of 0
    assert math.isnan(flipped.ratio) and flipped.delta == 1.0 and flipped.winner == "zfs"


def test_pairs_columns_keep_their_order_whichever_kind_of_group_comes_first():
    """Analysis.pairs is built from PairRow: the group's keys, then the pair's columns in
    PAIR_COLUMNS' order, or COUNT_COLUMNS' (design last) where the first group is counted,
    as the frames (and so the CSV, Parquet and JSON exports) have always had them."""
    counted = _records({"ext4": [(1, 8), (0, 8)], "xfs": [(7, 8), (8, 8)]})
    rounds = _records({"ext4": [(1, 8), (0, 8), (2, 8)], "xfs": [(7, 8), (8, 8), (6, 8)]},
                      metric="aaa")
    first_counted = analyze(counted, regression=False, trials=TRIALS).pairs
    first_rounds = analyze(pd.concat([counted, rounds], ignore_index=True), regression=False,
                           trials=TRIALS).pairs
    assert tuple(first_counted.columns[-len(COUNT_COLUMNS):]) == COUNT_COLUMNS
    assert tuple(first_rounds.columns[-len(PAIR_COLUMNS):]) == PAIR_COLUMNS
    assert list(first_rounds["design"]) == ["blocked", DESIGN]
    assert first_rounds.dtypes["significant"] == bool and first_rounds.dtypes["n_other"] == "int64"


def test_engine_routes_declared_counts_to_the_pooled_test():
    """One round of ext4 (8 of 8 silent) and zfs (0 of 8): the round test cannot say anything,
    the pooled test ranks zfs first; the summary gets the pooled rate as `estimate`."""
    recs = _records({"ext4": [(8, 8)], "zfs": [(0, 8)]})
    plain = analyze(recs, regression=False)
    assert "~" in ranking_line(plain.tiers.iloc[0]) and plain.tiers.iloc[0]["too_few"]
    a = analyze(recs, regression=False, trials=TRIALS)
    (row,) = a.pairs[a.pairs["metric"] == "silent"].to_dict("records")
    assert row["design"] == DESIGN and row["n_baseline"] == row["n_other"] == 8
    assert row["p"] == pytest.approx(stats.boschloo_exact([[8, 0], [0, 8]]).pvalue, rel=1e-9)
    t = a.tiers.iloc[0]
    assert ranking_line(t).startswith("silent: zfs ≫ ext4") and t["tiers"] == [["zfs"], ["ext4"]]
    assert t["test"].startswith("Boschloo exact test on the damaged pooled over rounds "
                                "(each one an exchangeable trial)")
    est = a.summary.set_index(["metric", "level"])["estimate"]
    assert est[("silent", "ext4")] == 1.0 and est[("silent", "zfs")] == 0.0
    assert math.isnan(est[("damaged", "ext4")])
    assert (a.summary.set_index(["metric", "level"])["median"][("silent", "ext4")]) == 8.0


def test_rounds_are_pooled():
    recs = _records({"btrfs": [(5, 8), (3, 8)], "zfs": [(0, 8), (1, 8)]})
    a = analyze(recs, regression=False, trials=TRIALS)
    (row,) = a.pairs[a.pairs["metric"] == "silent"].to_dict("records")
    assert (row["n_baseline"], row["median_baseline"], row["median_other"]) == (16, 0.5, 1 / 16)
    assert row["p"] == pytest.approx(stats.boschloo_exact([[8, 1], [8, 15]]).pvalue, rel=1e-9)


def test_a_count_without_its_trials_in_the_unit_keeps_the_round_test():
    recs = _records({"ext4": [(8, 8), (8, 8)], "zfs": [(0, 8), (0, 8)]})
    recs = recs[~((recs["metric"] == "damaged") & (recs["fs"] == "zfs") & (recs["iteration"] == 2))]
    a = analyze(recs, regression=False, trials=TRIALS)
    (row,) = a.pairs[a.pairs["metric"] == "silent"].to_dict("records")
    assert row["test"] == "Mann-Whitney U" and "estimate" not in a.summary


def test_a_count_without_direction_is_described_with_its_rate():
    recs = _records({"ext4": [(0, 8)], "zfs": [(8, 8)]}, metric="detected", better=None)
    a = analyze(recs, regression=False, trials=TRIALS)
    assert a.pairs.empty
    est = a.summary.set_index(["metric", "level"])["estimate"]
    assert est[("detected", "zfs")] == 1.0


def test_integrity_declares_its_counts_and_the_report_passes_them():
    from fslab.results.load import declared_trials
    from fslab.workloads.integrity import IntegritySuite, measurements
    recs = _records({"ext4": [(8, 8)]})
    assert declared_trials(recs) == {"detected": "damaged", "silent": "damaged",
                                     "healed": "damaged", "healed_after_scrub": "damaged"}
    assert declared_trials(recs.assign(suite="fio")) == {}
    # what the suite records agrees with what it declares
    res = {"damaged": 8, "counts": {"detected": 0, "silent": 8, "healed": 0},
           "victims": [{"after_scrub": "silent"}] * 8, "collateral": []}
    declared = {m.key: m for m in IntegritySuite.metrics}
    for m in measurements(res, "x"):
        assert (m.unit, m.better) == (declared[m.metric].unit, declared[m.metric].better)
