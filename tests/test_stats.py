"""The statistics engine, cross-checked against direct scipy/statsmodels calls on fixed data."""
from __future__ import annotations


import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.formula.api import ols
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.multitest import multipletests

from fslab.analysis import analyze
from fslab.analysis.describe import median_ci_ranks, min_samples_for_median_ci
from fslab.analysis.pairwise import cliffs_delta, holm, magnitude
from fslab.records import RECORD_COLUMNS
from fslab.report.verdicts import ranking_line

# fixed data: three filesystems, 8 rounds; xfs clearly faster, btrfs ~ ext4; one wild value
VALUES = {
    "ext4": [100.0, 102, 98, 101, 99, 103, 97, 100],
    "xfs": [121.0, 119, 124, 118, 122, 120, 125, 117],
    "btrfs": [101.0, 97, 99, 104, 96, 100, 102, 400],     # 400: an outlier, kept
}


def frame(values=VALUES, metric="write_iops", unit="ops/s", better="higher", case="randwrite",
          rounds=None) -> pd.DataFrame:
    rows = []
    for fs, vs in values.items():
        for i, v in enumerate(vs):
            rows.append({"run_id": "r1", "host": "h", "fs": fs, "variant": "default", "suite": "fio",
                         "case": case, "params": "{}", "iteration": (rounds or range(1, 99))[i],
                         "metric": metric, "value": v, "unit": unit, "better": better,
                         "artifact": None, "ts": 0.0})
    return pd.DataFrame(rows, columns=RECORD_COLUMNS)


@pytest.fixture(scope="module")
def result():
    return analyze(frame(), regression=False)


def level(summary, name):
    return summary[summary["level"] == name].iloc[0]


def test_descriptives_match_numpy_and_scipy(result):
    for fs, vs in VALUES.items():
        row, x = level(result.summary, fs), np.array(vs)
        assert row["n"] == 8
        assert row["mean"] == pytest.approx(x.mean())
        assert row["median"] == pytest.approx(np.median(x))
        assert row["sd"] == pytest.approx(x.std(ddof=1))
        assert row["cv"] == pytest.approx(x.std(ddof=1) / x.mean())
        assert (row["min"], row["max"]) == (x.min(), x.max())
        lo, hi = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
        assert (row["mean_ci_lo"], row["mean_ci_hi"]) == (pytest.approx(lo), pytest.approx(hi))
        # n=8: the 95% order-statistic interval of the median is [x(1), x(8)] (coverage 99.2%)
        assert (row["median_ci_lo"], row["median_ci_hi"]) == (x.min(), x.max())


def test_median_ci_needs_six_samples_like_benchstat():
    assert min_samples_for_median_ci() == 6
    assert median_ci_ranks(5) is None
    assert median_ci_ranks(6) == (1, 6)
    lo, hi = median_ci_ranks(20)
    # coverage of [x(lo), x(hi)] >= 95%, and the next tighter one is below 95%
    cover = lambda k: 1 - 2 * stats.binom.cdf(k - 1, 20, 0.5)
    assert cover(lo) >= 0.95 > cover(lo + 1) and hi == 21 - lo
    small = analyze(frame({"a": [1.0, 2, 3], "b": [2.0, 3, 4]}), regression=False).summary
    assert small["median_ci_lo"].isna().all()
    assert small["median_ci_note"].str.contains("too few samples").all()


def test_outlier_flagged_and_kept(result):
    flagged = result.data[result.data["outlier"]]
    assert list(flagged["value"]) == [400.0]
    assert level(result.summary, "btrfs")["outliers"] == 1
    assert level(result.summary, "btrfs")["max"] == 400          # never dropped
    assert level(result.summary, "ext4")["outliers"] == 0


def test_omnibus_matches_scipy_and_statsmodels(result):
    omni = result.omnibus.iloc[0]
    groups = [np.array(VALUES[k]) for k in sorted(VALUES)]
    assert omni["kw_p"] == pytest.approx(stats.kruskal(*groups).pvalue)
    df = frame()
    table = anova_lm(ols("value ~ C(fs)", data=df).fit())
    assert omni["anova_f"] == pytest.approx(table["F"].iloc[0])
    assert omni["anova_p"] == pytest.approx(table["PR(>F)"].iloc[0])
    resid = ols("value ~ C(fs)", data=df).fit().resid
    assert omni["shapiro_p"] == pytest.approx(stats.shapiro(resid).pvalue)
    assert omni["levene_p"] == pytest.approx(stats.levene(*groups, center="median").pvalue)
    # the outlier makes the residuals non-normal: the sentence must say so
    assert omni["shapiro_p"] < 0.05 and "Rely on Kruskal-Wallis" in omni["assumptions"]


def exact_two_sided_u_p(a, b) -> float:
    """Brute force, independent of the engine: U counted pair by pair (ties 1/2) over every
    relabelling of the pooled values."""
    from itertools import combinations
    pooled = list(a) + list(b)
    def u(bs, as_):
        return sum((y > x) + 0.5 * (y == x) for y in bs for x in as_)
    centre = len(a) * len(b) / 2
    obs = abs(u(b, a) - centre)
    hits = total = 0
    for idx in combinations(range(len(pooled)), len(b)):
        bs = [pooled[i] for i in idx]
        as_ = [pooled[i] for i in range(len(pooled)) if i not in idx]
        hits += abs(u(bs, as_) - centre) >= obs - 1e-9
        total += 1
    return hits / total


def test_interleaved_rounds_are_compared_within_rounds_with_holm(result):
    """Every level ran once per round: each pair is a paired t-test on the per-round log
    ratios (scipy's ttest_rel on the logs), its ratio the geometric-mean ratio with the
    t-interval, its effect size within rounds, Holm over the pairs as statsmodels computes it."""
    pairs = result.pairs.set_index(["baseline", "other"])
    assert result.levels == ["btrfs", "ext4", "xfs"]
    raw = {}
    for a, b in [("btrfs", "ext4"), ("btrfs", "xfs"), ("ext4", "xfs")]:
        row = pairs.loc[(a, b)]
        assert row["test"] == "paired t-test on within-round log ratios" and row["paired"]
        d = np.log(VALUES[b]) - np.log(VALUES[a])
        raw[(a, b)] = stats.ttest_rel(np.log(VALUES[b]), np.log(VALUES[a])).pvalue
        assert row["p"] == pytest.approx(raw[(a, b)])
        # the effect size within rounds too: the share of rounds b is above a minus below
        assert row["delta"] == pytest.approx(np.mean(np.sign(np.array(VALUES[b]) - np.array(VALUES[a]))))
        assert row["ratio"] == pytest.approx(np.exp(d.mean()))
        lo, hi = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
        assert (row["ratio_ci_lo"], row["ratio_ci_hi"]) == pytest.approx((np.exp(lo), np.exp(hi)))
    expected = multipletests(list(raw.values()), method="holm")[1]
    assert list(pairs["p_holm"]) == pytest.approx(list(expected))
    xfs = pairs.loc[("ext4", "xfs")]
    assert xfs["significant"] and xfs["winner"] == "xfs"
    assert xfs["verdict"].startswith("+20.") and "δ=1.00 large" in xfs["verdict"]
    assert pairs.loc[("btrfs", "ext4")]["verdict"] == "~"


def test_shared_drift_cancels_within_rounds_where_the_unpaired_test_sees_noise():
    """5% drift shared by both filesystems in each round, 3% true difference: the
    within-round test separates them; Mann-Whitney on the same values cannot."""
    drift = np.array([1.0, 1.06, 0.95, 1.04, 0.93, 1.07, 0.97, 1.02])
    own = np.array([1.002, 0.995, 1.004, 0.998, 1.001, 0.997, 1.003, 0.999])
    data = {"ext4": list(100 * drift), "xfs": list(103 * drift * own)}
    row = analyze(frame(data), regression=False).pairs.iloc[0]
    assert row["significant"] and row["winner"] == "xfs"
    assert stats.mannwhitneyu(data["xfs"], data["ext4"], method="exact").pvalue > 0.2


def test_unpaired_uses_mann_whitney():
    # rounds differ between levels (e.g. a resumed run): not paired
    df = pd.concat([frame({"ext4": VALUES["ext4"]}), frame({"xfs": VALUES["xfs"]}, rounds=range(11, 19))])
    row = analyze(df, regression=False).pairs.iloc[0]
    assert row["test"] == "Mann-Whitney U" and not row["paired"]
    assert row["p"] == pytest.approx(stats.mannwhitneyu(VALUES["xfs"], VALUES["ext4"], method="exact").pvalue)


def test_lower_is_better_direction():
    lat = {"ext4": [10.0, 11, 9, 10, 12, 10, 11, 9], "xfs": [20.0, 21, 19, 22, 20, 21, 19, 20]}
    a = analyze(frame(lat, metric="write_clat_mean", unit="ns", better="lower"), regression=False)
    pair = a.pairs.iloc[0]
    assert pair["winner"] == "ext4" and pair["change_pct"] > 0     # xfs is slower
    t = a.tiers.iloc[0]
    assert t["tiers"] == [["ext4"], ["xfs"]]                        # lower latency ranks first
    ratio = np.exp(np.mean(np.log(lat["xfs"]) - np.log(lat["ext4"])))     # within rounds
    assert t["levels_info"]["xfs"]["ratio_to_best"] == pytest.approx(ratio)


def test_undirected_metrics_are_described_not_ranked():
    a = analyze(frame({"ext4": [0.0, 0, 5], "xfs": [22.0, 22, 22]}, metric="error", unit="code",
                      better=None), regression=False)
    assert a.pairs.empty and a.tiers.empty
    assert len(a.summary) == 2
    assert "not ranked" in a.omnibus.iloc[0]["assumptions"]


def test_reproducible_bootstrap_and_too_few_note():
    one = analyze(frame(), regression=False).pairs["ratio_ci_lo"]
    two = analyze(frame(), regression=False).pairs["ratio_ci_lo"]
    assert list(one) == list(two)
    tiny = analyze(frame({"ext4": [1.0, 2], "xfs": [5.0, 6]}), regression=False).pairs.iloc[0]
    assert tiny["verdict"] == "~" and "cannot show a difference" in tiny["note"]


def test_cliffs_delta_and_holm_helpers():
    a, b = np.array([1.0, 2, 3]), np.array([2.0, 3, 4])
    brute = np.mean([np.sign(y - x) for x in a for y in b])
    assert cliffs_delta(a, b) == pytest.approx(brute)
    assert [magnitude(d) for d in (0.1, 0.2, 0.4, 0.5)] == ["negligible", "small", "medium", "large"]
    p = [0.01, 0.04, 0.03, 0.2]
    assert list(holm(p)) == pytest.approx(list(multipletests(p, method="holm")[1]))


def test_factor_is_a_parameter():
    df = pd.concat([frame({"ext4": VALUES["ext4"]}).assign(run_id="A"),
                    frame({"ext4": VALUES["xfs"]}).assign(run_id="B")])
    a = analyze(df, factor="run_id", order=["A", "B"], regression=False)
    assert a.levels == ["A", "B"] and "fs" in a.keys and "run_id" not in a.keys
    row = a.pairs.iloc[0]
    assert (row["baseline"], row["other"]) == ("A", "B")
    assert row["test"] == "Mann-Whitney U"       # rounds of different runs are unrelated
    with pytest.raises(ValueError):
        analyze(df, factor="nonsense")


def test_regression_view_heldout_r2():
    rng = np.random.default_rng(3)
    rows = []
    for case, base in (("randread", 100), ("randwrite", 50)):
        vals = {fs: list(base * f + rng.normal(0, 1, 12)) for fs, f in (("ext4", 1), ("xfs", 2))}
        rows.append(frame(vals, case=case))
    reg = analyze(pd.concat(rows)).regression.set_index("model")
    assert set(reg.index) == {"linear", "decision tree", "random forest"}
    # xfs doubles each workload: trees capture that interaction, an additive linear model cannot
    assert reg.loc["decision tree", "r2_heldout"] > 0.95 and reg.loc["random forest", "r2_heldout"] > 0.95
    assert reg.loc["linear", "r2_heldout"] < reg.loc["decision tree", "r2_heldout"]
    assert (reg["rows"] == 48).all()


def test_two_rounds_or_unmatched_rounds_use_mann_whitney():
    # the within-round t-test needs 3 common rounds (significance.MIN_BLOCKS); with 2 it
    # would have one degree of freedom: Mann-Whitney, which cannot separate 2 + 2 values
    row = analyze(frame({"ext4": [100.0, 101], "xfs": [130.0, 131]}), regression=False).pairs.iloc[0]
    assert row["test"] == "Mann-Whitney U" and not row["significant"]
    # a deterministic quantity (the same value every round): the within-round differences do
    # not vary, the t statistic is undefined, and the exact test judges the values
    row = analyze(frame({"ext4": [7.0] * 5, "xfs": [9.0] * 5}), regression=False).pairs.iloc[0]
    assert row["test"] == "Mann-Whitney U" and row["p"] == pytest.approx(2 / 252)


def test_a_failed_round_leaves_the_pair_blocked_on_the_rounds_both_ran():
    df = frame({"ext4": [100.0, 102, 98, 101, 99], "xfs": [110.0, 113, 108, 111]}, rounds=range(1, 6))
    row = analyze(df, regression=False).pairs.iloc[0]
    assert row["paired"] and row["blocks"] == 4 and row["note"] == "paired on the 4 rounds both ran"
    assert row["p"] == pytest.approx(stats.ttest_rel(np.log([110.0, 113, 108, 111]),
                                                     np.log([100.0, 102, 98, 101])).pvalue)


def test_unpaired_ratio_interval_inverts_the_exact_test():
    """Rounds that do not match: the ratio is the Hodges-Lehmann shift of the logs and its
    interval the pair of Walsh-type differences the exact U distribution picks."""
    from fslab.analysis.pairwise import shift_interval
    a, b = np.log([100.0, 102, 98, 101, 99]), np.log([110.0, 112, 109, 115, 111])
    est, lo, hi, level = shift_interval(a, b)
    d = np.sort(np.subtract.outer(b, a).ravel())
    assert est == pytest.approx(np.median(d))
    # 5 + 5: P(U <= 2) = 4/252, so [d_(3), d_(23)] covers with 1 - 8/252
    assert (lo, hi) == (d[2], d[-3]) and level == pytest.approx(1 - 8 / 252)
    assert math.isnan(shift_interval(a[:3], b[:3])[1])        # 3 + 3 cannot reach 95%


def _many_groups(groups: int = 24, rounds: int = 12) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    parts = []
    for g in range(groups):
        values = {fs: list(rng.lognormal(mean=5 + k * 0.05, sigma=0.05, size=rounds))
                  for k, fs in enumerate(("btrfs", "ext4", "xfs", "zfs"))}
        parts.append(frame(values, metric=f"m{g % 12}", case=f"case{g // 12}",
                           better="lower" if g % 5 == 0 else "higher", rounds=range(1, rounds + 1)))
    return pd.concat(parts, ignore_index=True)


def test_large_analysis_on_two_processes_equals_one(monkeypatch):
    """Above forked.MIN_SIZE["analysis"] half the groups (and the regression fits) go to forked
    children; the tables must be exactly those of doing it all in one process. (The size
    that forks is lowered to this run's: what is compared does not depend on it.)"""
    from fslab.system import forked
    records = _many_groups()
    monkeypatch.setitem(forked.MIN_SIZE, "analysis", len(records))
    assert forked.worth_it("analysis", len(records))
    forked_result = analyze(records)
    monkeypatch.setitem(forked.MIN_SIZE, "analysis", 10 ** 9)
    serial = analyze(records)
    for name in ("summary", "omnibus", "pairs", "regression"):
        pd.testing.assert_frame_equal(getattr(forked_result, name), getattr(serial, name))
    assert len(forked_result.pairs) == 24 * 6 and forked_result.pairs["significant"].any()
    assert ([ranking_line(t) for t in forked_result.tiers.to_dict("records")]
            == [ranking_line(t) for t in serial.tiers.to_dict("records")])


def _fails_in_a_child(parent: int, x: int) -> int:
    import os
    if os.getpid() != parent:
        raise RuntimeError("only the parent can do this")
    return x * 2


def test_forked_work_falls_back_to_this_process_when_the_child_fails():
    import os
    from fslab.system import forked
    assert forked.start(_fails_in_a_child, os.getpid(), 21)() == 42
    assert forked.start(pow, 2, 10)() == 1024


def test_tied_medians_rank_in_level_order():
    """A tie for best or runner-up goes to the level that comes first (sorted names),
    whatever the direction: pandas' default sort would pick one arbitrarily."""
    tied = {"btrfs": [1.0, 2, 3], "ext4": [5.0, 6, 7], "xfs": [5.0, 6, 7], "zfs": [5.0, 6, 7]}
    for better in ("higher", "lower"):
        t = analyze(frame(tied, better=better), regression=False).tiers.iloc[0]
        order = [lv for tier in t["tiers"] for lv in tier]
        assert order[:2] == (["ext4", "xfs"] if better == "higher" else ["btrfs", "ext4"])


def test_ties_at_small_n_get_the_exact_p_not_the_normal_approximation():
    # audit: [0,0,0] vs [2,2,2] got p=0.047 from the normal approximation; exact is 0.10
    a = analyze(frame({"ext4": [0.0, 0, 0], "xfs": [2.0, 2, 2]}, metric="errors", unit="count",
                      better="lower"), regression=False)
    row = a.pairs.iloc[0]
    assert row["p"] == pytest.approx(0.1) and not row["significant"]
    assert "too few" in ranking_line(a.tiers.iloc[0])
    # and the reverse: fully separated, tied n=5 samples are told apart
    a = analyze(frame({"ext4": [1.0, 1, 1, 1, 1], "xfs": [3.0, 3, 3, 3, 3]}), regression=False)
    assert a.pairs.iloc[0]["p"] == pytest.approx(exact_two_sided_u_p([1.0] * 5, [3.0] * 5))
    assert a.tiers.iloc[0]["tiers"] == [["xfs"], ["ext4"]]


def test_tiers_rank_everyone_not_only_the_best_two():
    # the run: ext4 and xfs tie at ~250k, btrfs 20x and zfs 70x behind
    data = {"ext4": [250e3, 251e3, 249e3, 252e3, 248e3], "xfs": [253e3, 250e3, 251e3, 254e3, 249e3],
            "btrfs": [11.8e3, 11.9e3, 11.7e3, 12e3, 11.6e3], "zfs": [3.6e3, 3.5e3, 3.7e3, 3.6e3, 3.65e3]}
    t = analyze(frame(data), regression=False).tiers.iloc[0]
    assert t["tiers"] == [["xfs", "ext4"], ["btrfs"], ["zfs"]]
    assert ranking_line(t) == "write IOPS: xfs ≈ ext4 ≫ btrfs (0.047×) ≫ zfs (0.014×)"
    info = t["levels_info"]["zfs"]
    assert info["tier"] == 3 and info["ratio_ci"][0] <= info["ratio_to_best"] <= info["ratio_ci"][1]


# a ≈ b and b ≈ c but a ≫ c (within rounds): no tiers can say that
NON_TRANSITIVE = {"a": [100.0, 105.13, 97.04, 102.02, 104.08, 95.12, 101.01, 98.02],
                  "b": [102.02, 101.01, 98.02, 97.53, 106.18, 92.31, 102.53, 94.18],
                  "c": [98.12, 102.94, 95.31, 100.0, 101.82, 93.33, 99.0, 95.98]}


def test_non_transitive_results_are_shown_as_letters_never_as_a_false_step():
    a = analyze(frame(NON_TRANSITIVE), regression=False)
    p = a.pairs.set_index(["baseline", "other"])
    assert not p.loc[("a", "b")]["significant"] and not p.loc[("b", "c")]["significant"]
    assert p.loc[("a", "c")]["significant"]
    t = a.tiers.iloc[0]
    assert t["display"] == "letters" and t["letters"] == {"a": "a", "b": "ab", "c": "b"}
    line = ranking_line(t)
    assert line.startswith("write IOPS: a [a], b [ab], c [b] (0.9") and "≫" not in line


def test_letter_columns_share_a_letter_exactly_when_a_pair_is_not_significant():
    from itertools import combinations as pairs_of
    from fslab.analysis.tiers import letter_columns
    rng = np.random.default_rng(5)
    levels = list("abcdef")
    for _ in range(200):
        sig = {frozenset(p) for p in pairs_of(levels, 2) if rng.random() < 0.5}
        columns = letter_columns(levels, sig)
        for x, y in pairs_of(levels, 2):
            shared = any(x in c and y in c for c in columns)
            assert shared == (frozenset((x, y)) not in sig)


def test_more_rounds_never_erase_verdicts():
    # audit: 7 rounds gave 10/10 significant pairs and 8 rounds 0/10 (test switch + Holm)
    base = [100.0, 101, 99, 102, 98, 100.5, 99.5, 101.5]
    jitter = np.random.default_rng(2).normal(0, 0.005, size=(5, 8))
    counts = []
    for n in (7, 8):
        data = {f"fs{k}": [v * (1 + 0.2 * k) * (1 + jitter[k, i]) for i, v in enumerate(base[:n])]
                for k in range(5)}
        counts.append(int(analyze(frame(data), regression=False).pairs["significant"].sum()))
    assert counts == [10, 10]


def test_assumption_checks_at_tiny_n_say_too_few():
    # audit: n=3 printed "assumptions hold" with SDs of 1 vs 245; n=2 always "variances differ"
    for data in ({"ext4": [100.0, 101, 102], "xfs": [100.0, 400, 590]},
                 {"ext4": [100.0, 101], "xfs": [130.0, 131]}):
        omni = analyze(frame(data), regression=False).omnibus.iloc[0]
        assert omni["assumptions"].startswith("too few values to check")


def test_headline_names_the_winner_and_flags_memory_bound_rows():
    from fslab.report.headline import headline, headline_text
    from fslab.report.export import verdicts_json
    from fslab.report.headline import memory_bound
    data = {"ext4": [250e3, 251e3, 249e3, 252e3, 248e3], "xfs": [253e3, 250e3, 251e3, 254e3, 249e3],
            "btrfs": [11.8e3, 11.9e3, 11.7e3, 12e3, 11.6e3], "zfs": [3.6e3, 3.5e3, 3.7e3, 3.6e3, 3.65e3]}
    share = {fs: [0.04] * 5 if fs == "ext4" else [1.0] * 5 for fs in data}
    recs = pd.concat([frame(data), frame(share, metric="write_amplification", unit="ratio",
                                         better="lower")], ignore_index=True)
    a = analyze(recs, regression=False)
    entries = headline(a, recs)
    assert [e["workload"] for e in entries] == ["fio:randwrite"]
    assert entries[0]["lines"][0] == "write IOPS: xfs ≈ ext4 ≫ btrfs (0.047×) ≫ zfs (0.014×)"
    assert entries[0]["memory_bound"]["shares"] == {"ext4": 0.04}
    assert "device saw 4% of the bytes" in headline_text(entries)[0]
    v = {e["metric"]: e for e in verdicts_json(a, memory_bound(recs))}["write_iops"]
    assert v["tiers"] == [["xfs", "ext4"], ["btrfs"], ["zfs"]]
    assert set(v["levels"]["zfs"]) == {"median", "estimate", "ratio_to_best", "ratio_ci",
                                       "ratio_ci_level", "tier", "letters", "n"}
    assert v["display"] == "tiers" and len(v["pairs"]) == 6
    step = next(p for p in v["pairs"] if {p["a"], p["b"]} == {"ext4", "btrfs"})
    assert step["significant"] and step["p_holm"] < 0.05 and step["ratio_ci"][0] is not None
    assert v["levels"]["xfs"]["ratio_to_best"] == 1.0 and v["levels"]["zfs"]["tier"] == 3
    assert v["memory_bound"]["shares"] == {"ext4": 0.04} and v["better"] == "higher"


def test_memory_flag_marks_speeds_never_a_space_answer():
    """S1's dedup unit reads from memory at page cache on (device_read_share 3%), but its
    answer, the space saving read after a commit, is no memory number: the flag goes on
    its read IOPS only."""
    from fslab.report.export import verdicts_json
    from fslab.report.headline import headline, memory_bound
    space = frame({"ext4": [1.0] * 5, "zfs": [1.99] * 5}, metric="space_saving_ratio",
                  unit="ratio", case="dedup")
    iops = frame({"ext4": [469e3, 470e3, 468e3, 471e3, 467e3], "zfs": [5e3, 5.1e3, 4.9e3, 5e3, 5.2e3]},
                 metric="read_iops", case="dedup")
    share = frame({"ext4": [0.03] * 5, "zfs": [1.0] * 5}, metric="device_read_share",
                  unit="ratio", better=None, case="dedup")
    recs = pd.concat([space, iops, share], ignore_index=True)
    a = analyze(recs, regression=False)
    entry = headline(a, recs)[0]
    assert entry["metrics"] == ["space_saving_ratio"] and entry["memory_bound"] is None
    v = {e["metric"]: e for e in verdicts_json(a, memory_bound(recs))}
    assert v["read_iops"]["memory_bound"]["shares"] == {"ext4": 0.03}
    assert v["space_saving_ratio"]["memory_bound"] is None


def test_verdict_table_names_metrics_as_people_do_and_keeps_the_key():
    from fslab.report.tables import verdict_table
    a = analyze(frame({"ext4": [250e3, 251e3, 249e3, 252e3, 248e3],
                       "zfs": [3.6e3, 3.5e3, 3.7e3, 3.6e3, 3.65e3]}), regression=False)
    row = verdict_table(a).iloc[0]
    # the cells say their unit ("250 k ops/s"): a heading "[ops/s]" would stand over them
    # where they are scaled ("[ns]" over µs)
    assert row["metric"] == "write IOPS" and row["metric_key"] == "write_iops"
    assert row["ext4"].startswith("250 k ops/s")


def test_a_reason_for_tilde_that_repeats_is_said_once():
    from fslab.report.headline import headline, headline_text
    recs = pd.concat([frame({"ext4": [1.0, 2.0], "xfs": [1.5, 2.5]}, case=c) for c in ("a", "b")],
                     ignore_index=True)
    lines = headline_text(headline(analyze(recs, regression=False), recs))
    numbered = [ln for ln in lines if ln.startswith("[")]
    assert len(numbered) == 1 and numbered[0].startswith("[1] n=2: too few rounds")
    assert all("~ [1]" in ln for ln in lines[:2]) and lines[2] == numbered[0]
    assert numbered[0].endswith("(3 per filesystem can)")     # the whole reason, once
    assert not any("])" in ln for ln in lines)               # and no stray parenthesis


def test_rounds_needed_is_the_fewest_that_can_separate_after_holm():
    from scipy.stats import mannwhitneyu
    from fslab.analysis.significance import MIN_BLOCKS, rounds_needed
    for k in (2, 4, 5, 8):
        n, pairs = rounds_needed(k, blocked=False), k * (k - 1) // 2
        lo, hi = list(range(n)), list(range(n, 2 * n))        # fully separated samples
        assert mannwhitneyu(lo, hi, method="exact").pvalue < 0.05 / pairs
        lo, hi = list(range(n - 1)), list(range(n - 1, 2 * n - 2))
        assert mannwhitneyu(lo, hi, method="exact").pvalue >= 0.05 / pairs
        assert rounds_needed(k) == MIN_BLOCKS == 3     # fslab's interleaved rounds: within-round t
    assert rounds_needed(4, blocked=False) == 5


def test_too_few_rounds_says_how_many_would_do():
    a = analyze(frame({"ext4": [1.0, 2.0], "xfs": [3.0, 4.0]}), regression=False)
    assert a.tiers.iloc[0]["why"] == "n=2: too few rounds for any test to separate 2 filesystems (3 per filesystem can)"


def test_the_answer_of_an_integrity_workload_is_what_passed_silently():
    # audit: the headline fell back to the alphabetically first metric, so integrity's answer
    # was "collateral damage: ~" while ext4 returned 8 of 8 flipped blocks silently
    from fslab.report.headline import headline
    silent = {"ext4": [8.0] * 5, "zfs": [0.0] * 5}
    recs = pd.concat([frame(silent, metric="silent", unit="count", better="lower", case="data"),
                      frame({"ext4": [0.0] * 5, "zfs": [0.0] * 5}, metric="collateral_damage",
                            unit="count", better="lower", case="data"),
                      frame({"ext4": [0.0] * 5, "zfs": [8.0] * 5}, metric="healed",
                            unit="count", better="higher", case="data")], ignore_index=True)
    entries = headline(analyze(recs, regression=False), recs)
    assert entries[0]["metrics"] == ["silent"]
    assert entries[0]["lines"][0].startswith("silent: zfs ≫ ext4")


def test_each_workload_is_answered_by_the_metric_of_its_question():
    from fslab.metrics import answer_metrics
    asked = {  # metric sets as the suites record them (abridged), and the answer expected
        "dedup": ({"read_iops", "read_bw", "read_clat_p99", "space_saving_ratio", "setup_time",
                   "space_consumed"}, ["space_saving_ratio"]),
        "largefile": ({"total_time", "write_throughput", "space_consumed", "space_saving_ratio"},
                      ["total_time"]),
        "smallfiles": ({"create_time", "space_overhead_per_file", "space_saving_ratio",
                        "space_consumed"}, ["space_overhead_per_file"]),
        "enospc": ({"checker_clean", "filled_bytes", "usable_bytes", "precious_intact"},
                   ["filled_bytes"]),
        "aging-step": ({"aging_factor", "grep_cost_aged", "layout_score_aged"}, ["aging_factor"]),
        "aging": ({"failed_steps", "pull_seconds_total"}, ["pull_seconds_total"]),
        "tasks": ({"elapsed", "major_faults", "capacity_initial"}, ["elapsed"]),
        "randwrite": ({"write_iops", "write_bw", "write_clat_p99", "write_amplification"},
                      ["write_iops", "write_clat_p99"]),
        "seqread": ({"read_iops", "read_bw", "read_clat_p99"}, ["read_bw", "read_clat_p99"]),
        # a job too short to time: its rates are unranked, so not in the tiers
        "filestat": ({"read_clat_mean", "read_clat_max", "read_clat_p99"},
                     ["read_clat_mean", "read_clat_p99"]),
    }
    for case, (metrics, want) in asked.items():
        assert answer_metrics(None, case, None, metrics) == want, case


def test_the_answer_shows_a_series_of_steps_at_its_last_step():
    # aging measures after 0, 25, 50 pulls: the answer is where it ended (ten lines of
    # intermediate steps pushed the other workloads off the first screen)
    from fslab.report.headline import headline
    parts = []
    for step in (0, 25, 50):
        f = frame({"ext4": [1.0 + step / 10] * 5, "xfs": [1.0] * 5}, metric="aging_factor",
                  unit="ratio", better="lower", case="git")
        f["suite"], f["params"] = "aging", f'{{"pulls": 50, "step": {step}}}'
        parts.append(f)
    f = frame({"ext4": [9.0] * 5, "xfs": [8.0] * 5}, metric="pull_seconds_total", unit="s",
              better="lower", case="git")
    f["suite"], f["params"] = "aging", '{"pulls": 50}'
    recs = pd.concat([*parts, f], ignore_index=True)
    entries = headline(analyze(recs, regression=False), recs)
    assert sorted(e["workload"] for e in entries) == ["aging:git pulls=50",
                                                      "aging:git pulls=50 step=50"]
    last = next(e for e in entries if e["workload"].endswith("step=50"))
    assert last["lines"][0].startswith("aging factor: xfs ≫ ext4")


def shown_apart(v: dict) -> set[frozenset]:
    """The pairs a verdict (report --json) shows as separated: across tiers, or with no
    letter in common; none for one group."""
    levels, order = v["levels"], v["order"]
    out = set()
    for i, x in enumerate(order):
        for y in order[i + 1:]:
            if v["display"] == "tiers" and levels[x]["tier"] != levels[y]["tier"]:
                out.add(frozenset((x, y)))
            if v["display"] == "letters" and not set(levels[x]["letters"]) & set(levels[y]["letters"]):
                out.add(frozenset((x, y)))
    return out


def assert_every_separation_is_a_significant_test(a) -> int:
    """Issue 26: every pair shown apart has a significant Holm test, every pair shown
    together has not, in the JSON every output renders from; and the words agree."""
    from fslab.report.export import verdicts_json
    checked = 0
    for v in verdicts_json(a, {}):
        significant = {frozenset((p["a"], p["b"])) for p in v["pairs"] if p["significant"]}
        assert shown_apart(v) == significant, v["line"]
        assert ("≫" in v["line"]) == (v["display"] == "tiers")
        assert (v["line"].split(": ", 1)[1].startswith("~")) == (not significant)
        checked += 1
    return checked


def test_every_separation_shown_is_a_significant_pair_on_varied_data():
    rng = np.random.default_rng(11)
    frames = [frame(NON_TRANSITIVE, case="nt"), frame(VALUES, case="v")]
    for i in range(30):
        truth = rng.choice([1.0, 0.97, 0.95, 0.9, 0.5], size=4)
        drift = rng.lognormal(0, 0.05, size=6)
        data = {f"fs{k}": list(truth[k] * 1000 * drift * rng.lognormal(0, 0.02, size=6)) for k in range(4)}
        frames.append(frame(data, case=f"sim{i}", better="higher" if i % 2 else "lower"))
    a = analyze(pd.concat(frames, ignore_index=True), regression=False)
    assert assert_every_separation_is_a_significant_test(a) == 32


def test_a_store_written_by_an_earlier_fslab_opens_and_shows_only_tested_separations(tmp_path):
    """A smoke run (ext4, xfs, fio, 3 rounds) stored by fslab 825dc16, before rounds were
    compared within themselves: it opens, its verdicts follow the tests, and Markdown
    renders from it."""
    import shutil
    from pathlib import Path
    from fslab.report.export import markdown
    from fslab.results.load import load
    from fslab.store import open_store
    src = Path(__file__).parent / "data" / "stores" / "825dc16-smoke-ext4-xfs"
    shutil.copytree(src, tmp_path / "store")
    store = open_store(tmp_path / "store")
    (run,) = store.runs()
    loaded = load(store, [run["run_id"]], regression=False)
    assert assert_every_separation_is_a_significant_test(loaded.analysis) > 10
    assert any(t["display"] != "one group" for t in loaded.analysis.tiers.to_dict("records"))
    text = markdown(loaded)
    assert "## Answer" in text and "fio:randwrite" in text
    store.close()


def test_a_steady_gain_under_drift_is_a_large_effect_within_rounds():
    """10% ahead in every round while the rounds drift by 30%: raw values overlap (Cliff's
    delta across rounds calls it small), the blocked test and its effect size do not."""
    from fslab.analysis.pairwise import compare_levels
    drift = np.array([1.0, 1.3, 0.8, 1.25, 0.9, 1.1])
    a, b = 100 * drift, 110 * drift * np.array([1.0, 1.01, 0.99, 1.0, 1.02, 0.98])
    rounds = np.arange(1, 7)
    row, = compare_levels({"a": (a, rounds), "b": (b, rounds)}, "higher", pairable=True)
    assert row.design == "blocked" and row.delta == 1.0
    assert abs(cliffs_delta(a, b)) < 0.33


def test_outliers_where_most_values_are_equal():
    """The MAD is 0 when more than half the values tie (fio's runtimes, bucketed latency
    percentiles): the mean absolute deviation is the scale then (Iglewicz and Hoaglin), so
    a 0.2% step is no outlier and a value far off 14 equal ones is; all equal: none. (One
    value off n - 1 equal ones scores n / 1.2533, so fewer than 13 values flag nothing.)"""
    from fslab.analysis.describe import outlier_mask
    v = pd.Series([2.752, 2.752, 2.758, 2.752, 2.752] + [9.0] * 14 + [900.0] + [9.0] * 4 + [90.0]
                  + [5.0] * 3)
    group = pd.Series(["t"] * 5 + ["far"] * 15 + ["few"] * 5 + ["same"] * 3)
    assert list(outlier_mask(v, [group])) == [False] * 19 + [True] + [False] * 8


def test_a_ratio_that_is_not_one_never_prints_as_one():
    """Beside a '≫' a '(1.0×)' reads as a contradiction: a ratio within rounding of 1 gets
    the digits that tell it from 1 (the default run's write amplification, xfs ≫ ext4)."""
    from fslab.analysis.names import ratio_text
    assert [ratio_text(x) for x in (0.0514, 0.5, 3.21, 71.9, 1.0)] == ["0.051×", "0.50×", "3.2×", "72×", "1.0×"]
    assert [ratio_text(x) for x in (1.003, 0.998, 1.04, 0.9951)] == ["1.003×", "0.998×", "1.04×", "0.995×"]


def test_levels_are_ordered_with_each_rounds_drift_taken_out():
    """The order's estimate is the additive fit log value = level + round: with every
    level in every round, exactly the geometric mean; with one level missing rounds (a
    decide's eliminated), the others keep all their rounds and it is placed by its own,
    corrected for how fast those rounds were."""
    from fslab.analysis.describe import describe
    rng = np.random.default_rng(5)
    truth = {"a": 1.0, "b": 0.95, "c": 0.9, "d": 0.7}
    rows = []
    for r in range(1, 11):
        drift = 2.0 if r <= 3 else 1.0          # the first rounds ran twice as fast
        for lv, t in truth.items():
            if lv == "d" and r > 3:
                continue                         # eliminated at round 3
            rows.append({"case": "x", "level": lv, "iteration": r,
                         "value": t * drift * float(rng.lognormal(0, 0.01))})
    df = pd.DataFrame(rows)
    got = describe(df, ["case"]).set_index("level")["gmean_adjusted"]
    # d ran only the fast rounds: its own geometric mean (1.4) beats every other level's
    # over their own rounds (a: 1.23); the fit puts it where it belongs
    assert got["d"] / got["a"] == pytest.approx(0.7, rel=0.02)
    assert list(got.sort_values(ascending=False).index) == ["a", "b", "c", "d"]
    # b and a: their mean within-round log ratio over all 10 rounds, not rounds 1-3 only
    both = df[df["level"].isin(["a", "b"])].pivot(index="iteration", columns="level", values="value")
    assert got["b"] / got["a"] == pytest.approx(np.exp(np.log(both["b"] / both["a"]).mean()), rel=1e-9)
    balanced = df[df["iteration"] <= 3]
    direct = np.exp(np.log(balanced["value"]).groupby(balanced["level"]).mean())
    assert describe(balanced, ["case"]).set_index("level")["gmean_adjusted"].to_dict() == \
        pytest.approx(direct.to_dict(), rel=1e-12)


def test_mann_whitney_beyond_enumeration_is_exact_or_monte_carlo_never_normal():
    """9+9 separated rounds (48,620 arrangements): the exact p is 2/C(18,9) = 4.1e-5, the
    smallest_p the notes assume; the normal approximation said about 4e-4. With ties the
    Monte Carlo estimate stays within its stated error of the exact enumerated p."""
    from scipy.special import comb
    from fslab.analysis.pairwise import (MONTE_CARLO_PERMUTATIONS, exact_mann_whitney_p,
                                         pair_p_detail, pair_test, smallest_p)
    a, b = np.arange(9, dtype=float), np.arange(9, dtype=float) + 100
    p, how = pair_p_detail(a, b)
    assert how == "exact" and p == pytest.approx(2 / comb(18, 9)) == pytest.approx(smallest_p(9, 9))
    # a mixed pair without ties: the counted p equals the enumerated one
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=9), rng.normal(0.8, 1, size=9)
    assert pair_p_detail(x, y)[0] == pytest.approx(exact_mann_whitney_p(x, y), abs=1e-12)
    # with ties: Monte Carlo, within 4 standard errors of the enumerated exact p, and said
    xt, yt = np.round(x), np.round(y)
    exact = exact_mann_whitney_p(xt, yt)
    p, how = pair_p_detail(xt, yt)
    assert how.startswith("Monte Carlo, 100,000 permutations")
    assert abs(p - exact) < 4 * np.sqrt(exact * (1 - exact) / MONTE_CARLO_PERMUTATIONS) + 1e-5
    assert p == pair_p_detail(xt, yt)[0]            # the same p every time
    assert pair_test(xt, yt).p_method == how


def test_the_best_column_never_joins_a_separated_pair_with_approx():
    """xfs noisy on top, ext4 and btrfs steady and 5% apart: no test separates xfs from
    either, but ext4 and btrfs are separated, so 'xfs ≈ ext4 ≈ btrfs' would say otherwise."""
    from fslab.report.tables import verdict_table
    base = np.array([100.0, 110, 90, 105, 95, 100, 108, 92])
    xfs = base * np.array([1.3, 0.85, 1.25, 0.9, 1.2, 0.95, 1.3, 0.9])
    ext4 = base * np.array([1.0, 1.01, 0.99, 1.0, 1.005, 0.995, 1.0, 1.01])
    btrfs = ext4 * 0.95 * np.array([1.0, 1.005, 0.995, 1.0, 1.0, 1.005, 0.995, 1.0])
    a = analyze(frame({"xfs": list(xfs), "ext4": list(ext4), "btrfs": list(btrfs)}), regression=False)
    p = a.pairs.set_index(["baseline", "other"])
    assert p.loc[("btrfs", "ext4")]["significant"] and not p.loc[("ext4", "xfs")]["significant"]
    assert a.tiers.iloc[0]["best"] == ["xfs", "ext4", "btrfs"]
    assert verdict_table(a)["best"].iloc[0] == "xfs (ext4, btrfs not told apart from it)"
    # where nothing among them is separated, ≈ still says it
    tied = analyze(frame({"a": [100.0, 101, 99, 100], "b": [100.5, 100, 99.5, 101], "c": [50.0, 51, 49, 50]}),
                   regression=False)
    assert verdict_table(tied)["best"].iloc[0] == "a ≈ b" or verdict_table(tied)["best"].iloc[0] == "b ≈ a"


def _ar1_records(phi: float, seed: int, rounds: int = 8) -> pd.DataFrame:
    """Three identical filesystems, seven workloads, 5% shared drift per round and 10% own
    noise that follows AR(1) with coefficient phi from round to round (0: independent)."""
    rng = np.random.default_rng(seed)
    rows = []
    for w in ("randread", "randwrite", "seqread", "seqwrite", "mixed", "rr32", "rw32"):
        drift = rng.normal(0, 0.05, rounds)
        for fs in ("ext4", "xfs", "btrfs"):
            e = np.zeros(rounds)
            e[0] = rng.normal(0, 0.1)
            for t in range(1, rounds):
                e[t] = phi * e[t - 1] + rng.normal(0, 0.1 * math.sqrt(1 - phi ** 2))
            rows.append(frame({fs: list(1000 * np.exp(drift + e))}, case=w))
    return pd.concat(rows, ignore_index=True)


def test_a_run_warns_when_its_own_noise_carries_over_from_round_to_round():
    """AR(1) 0.7 own noise over 8 rounds: the lag-1 autocorrelation of within-round residuals
    is positive and the permutation test flags it in the answer's notes; independent noise
    (20 seeds) never does. The 20 seeds' test gets the records with their levels, which is
    what the analysis hands it (checked on the last seed, whose full analysis the notes
    read): one analysis, not 20, of the records (~0.2 s each)."""
    from fslab.analysis.carryover import carryover
    from fslab.analysis.groups import FS_FACTOR, with_levels
    from fslab.report.headline import headline, headline_text
    carried = _ar1_records(0.7, seed=1)
    analysed = analyze(carried, regression=False)
    c = carryover(analysed.data, ["case", "metric"])
    assert c.violated and c.lag1 > 0.1 and c.series == 21 and c.p < 0.01
    lines = headline_text(headline(analysed, carried))
    assert any("rounds not independent" in ln and "lag-1 autocorrelation" in ln for ln in lines)
    for seed in range(20):
        independent = _ar1_records(0.0, seed)
        data = with_levels(independent, FS_FACTOR)
        assert not carryover(data, ["case", "metric"]).violated, seed
    a = analyze(independent, regression=False)
    pd.testing.assert_frame_equal(a.data.drop(columns="outlier"), data)
    assert not any("rounds not independent" in ln for ln in headline_text(headline(a, independent)))


def test_a_metric_below_its_floor_everywhere_is_described_not_ranked(tmp_path):
    """pgbench select-only writes nothing per transaction: 0.1-0.3 B of background writes
    on one filesystem against 0 B on the other tested significant and printed
    "xfs ≫ ext4 (n/a)". Below the catalogue's floor (1 B) the group is described, not
    ranked, and says why; a metric above its floor still ranks."""
    from conftest import fslab_in_process
    from fslab.records import Record
    from fslab.store.db import Store
    store = Store(tmp_path / "r")
    run_id = store.create_run('[run]\nprofile = "smoke"\n', {}, source="test", status="finished",
                              command="test")
    rows = {"ext4": ([0.21, 0.25, 0.19, 0.3, 0.22], [900, 910, 905, 920, 915], 520),
            "xfs": ([0.0, 0.0, 0.0, 0.0, 0.0], [800, 805, 790, 810, 800], 2600)}
    store.add_records(
        Record(run_id, "localhost", fs, "default", "pgbench", case, '{"clients":"2"}', it, metric,
               value, "B", "lower", None, 0.0)
        for fs, (select_only, tpcb, tpcb_bytes) in rows.items()
        for it in range(1, 6)
        for case, metric, value in (("select-only", "device_write_bytes_per_transaction",
                                     select_only[it - 1]),
                                    ("tpcb-like", "device_write_bytes_per_transaction",
                                     tpcb_bytes + tpcb[it - 1] / 100)))
    from fslab.results.load import load
    a = load(store, [run_id]).analysis
    omni = a.omnibus.set_index("case")["assumptions"]
    assert omni["select-only"] == ("described, not ranked: every level's median is below 1 B, "
                                   "the least that counts (none of it)")
    assert omni["tpcb-like"] != omni["select-only"]
    assert set(a.tiers["case"]) == {"tpcb-like"}        # only the one above its floor is ranked
    out = fslab_in_process("report", run_id, "--results", str(tmp_path / "r")).stdout
    assert not any("select-only" in line and ("≫" in line or "n/a" in line)
                   for line in out.splitlines()), out
    assert "1 more rows (latency details, CPU, unranked metrics)" in out
    assert any("tpcb-like" in line and "ext4 ≫ xfs" in line for line in out.splitlines()), out


def test_the_answer_flags_an_application_unit_whose_cpus_were_saturated():
    """pgbench at 92-99% system-wide CPU was ranked as if the filesystem had been measured:
    the answer line says which filesystem's rounds were CPU-bound, and the load; a
    filesystem whose units left CPU idle is not named."""
    from fslab.report.headline import headline, headline_text
    tps = {"ext4": [1146.0, 1500, 1490, 1510, 1495], "xfs": [1400.0, 1410, 1390, 1405, 1398]}
    busy = {"ext4": [99.0, 92, 95, 60, 70], "xfs": [50.0, 55, 52, 51, 49]}
    load = {"ext4": [4.3, 3.0, 3.2, 1.0, 1.1], "xfs": [0.9] * 5}
    parts = [frame(tps, metric="tps", unit="tx/s", case="tpcb-like"),
             frame(busy, metric="cpu_busy_system_wide", unit="%", better=None, case="tpcb-like"),
             frame(load, metric="load_per_cpu", unit="ratio", better=None, case="tpcb-like")]
    recs = pd.concat(parts, ignore_index=True).assign(suite="pgbench")
    entries = headline(analyze(recs, regression=False), recs)
    flag = entries[0]["cpu_bound"]
    assert flag["units"] == {"ext4": {"rounds": 3, "of": 5, "busy_max": 99.0, "load_max": 4.3}}
    line = headline_text(entries)[0]
    assert "⚠ CPU-bound: ext4 3 of 5 rounds (up to 99% of every CPU busy, load 4.3 per CPU)" in line
    assert "not the filesystem" in line and "xfs 0" not in line
    quiet = recs[~((recs["metric"] == "cpu_busy_system_wide") & (recs["fs"] == "ext4"))]
    assert headline(analyze(quiet, regression=False), quiet)[0]["cpu_bound"] is None


def test_too_few_rounds_names_the_rounds_the_test_in_use_needs():
    """Issue 47: "n=5: too few rounds for any test ... (3 per filesystem can)" where the
    within-round differences did not vary, so the exact sign-flip test judged the pairs:
    it needs 6 rounds for 2 filesystems, 8 for 4 (smallest p 2/2^n against 0.05 / pairs)."""
    drift = [1.0, 1.3, 0.8, 1.1, 0.9]
    two = analyze(frame({"ext4": [10 * d for d in drift], "xfs": [11 * d for d in drift]}),
                  regression=False)
    assert two.pairs.iloc[0]["test"].startswith("exact sign-flip")
    assert two.tiers.iloc[0]["why"].endswith("to separate 2 filesystems (6 per filesystem can)")
    four = analyze(frame({f"fs{i}": [(10 + i) * d for d in drift] for i in range(4)}),
                   regression=False)
    assert four.tiers.iloc[0]["why"].endswith("(8 per filesystem can)")
    from fslab.analysis.significance import sign_flip_rounds
    assert (sign_flip_rounds(2), sign_flip_rounds(4)) == (6, 8)
    six = analyze(frame({"ext4": [10 * d for d in drift + [1.2]], "xfs": [11 * d for d in drift + [1.2]]}),
                  regression=False)
    assert six.tiers.iloc[0]["display"] != "one group"      # 6 rounds do separate them


def test_a_run_too_short_for_the_carryover_check_says_so():
    """Issue 47: at 4-5 rounds the check's permutation p cannot reach 0.01 (its floor is
    2 / n!: a series and its reverse have the same lag-1 autocorrelation), and quick and
    standard run 5: with AR(1) 0.7 they said nothing. The answer says the check could not
    run; from 6 rounds it runs, and an independent run's answer says nothing of it."""
    from fslab.analysis.carryover import carryover
    from fslab.report.headline import headline, headline_text
    short = _ar1_records(0.95, seed=3, rounds=5)
    a = analyze(short, regression=False)
    assert carryover(a.data, ["case", "metric"]).p > 0.01     # the most carried-over noise
    lines = headline_text(headline(a, short))
    assert any("not checkable below 6 rounds (this run: 5)" in ln for ln in lines)
    ok = _ar1_records(0.0, seed=4, rounds=6)
    assert not any("not checkable" in ln for ln in headline_text(headline(analyze(ok, regression=False), ok)))
    from fslab.analysis.carryover import CHECKABLE
    assert CHECKABLE == 6


def test_the_answer_says_its_5_percent_is_per_line_and_what_that_means_across_lines():
    """Issue 47: Holm corrects within a (workload, metric); identical filesystems through
    six workloads got at least one false separation in 24-26% of runs, and the answer
    did not say its 5% was per line."""
    from fslab.report.headline import headline, headline_text
    recs = pd.concat([frame({"ext4": [1.0, 2.0, 1.5], "xfs": [1.1, 2.1, 1.4]}, case=c)
                      for c in ("a", "b", "c", "d", "e", "f")], ignore_index=True)
    lines = headline_text(headline(analyze(recs, regression=False), recs))
    scope = [ln for ln in lines if ln.startswith("5% per line")]
    assert scope and "across these 6 lines" in scope[0] and "about 26% of runs" in scope[0]
    assert "at most 30%" in scope[0]
