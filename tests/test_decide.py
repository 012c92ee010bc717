"""fslab decide's race, posterior and candidates on fixed or seeded data (no mounts)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from fslab.decide.candidates import from_catalogue, variant_name
from fslab.decide.posterior import posterior, smallest_detectable
from fslab.decide.race import Race, StopReason, look_levels, spent
from fslab.errors import FslabError


def run_race(truth: dict[str, float], own: float, drift: float = 0.05, seed: int = 1,
             max_rounds: int = 10, better: str = "higher") -> Race:
    rng = np.random.default_rng(seed)
    race = Race(list(truth), better, max_rounds=max_rounds)
    for r in range(1, max_rounds + 1):
        shared = rng.lognormal(0, drift)
        for lv in race.survivors:
            race.record(lv, r, truth[lv] * shared * rng.lognormal(0, own))
        race.look(r)
        if race.stopped:
            break
    return race


def test_a_clearly_worse_candidate_goes_at_the_first_look_with_the_answers_test():
    race = run_race({"ext4": 1.0, "ext4:sync": 0.3}, own=0.02)
    e = race.eliminated["ext4:sync"]
    assert e.round == 3 and race.stopped is StopReason.WINNER and race.survivors == ["ext4"]
    assert e.test == "paired t-test on within-round log ratios"
    a = np.log([race.values["ext4"][r] for r in (1, 2, 3)])
    b = np.log([race.values["ext4:sync"][r] for r in (1, 2, 3)])
    assert e.p == pytest.approx(stats.ttest_rel(b, a).pvalue)
    # the first look spends what rounds 1..3 of 10 carry (Pocock-type spending)
    assert e.alpha == pytest.approx(0.05 * math.log(1 + (math.e - 1) * 0.3))
    assert "below ext4 within rounds" in e.why


def test_identical_candidates_end_as_a_tie_within_delta_when_the_noise_allows():
    race = run_race({"a": 1.0, "b": 1.0}, own=0.003)
    assert race.stopped is StopReason.TIE and not race.eliminated


def test_noisy_identical_candidates_are_never_called_different_but_not_equivalent_either():
    race = run_race({"a": 1.0, "b": 1.0}, own=0.3, seed=3)
    assert race.stopped is StopReason.BUDGET and not race.eliminated


def test_lower_is_better_eliminates_the_slower():
    race = run_race({"fast": 1.0, "slow": 2.0}, own=0.02, better="lower")
    assert list(race.eliminated) == ["slow"]


def test_race_false_eliminations_stay_under_alpha_for_the_whole_race():
    """A/A over many races: an eliminated twin in at most ~5% of races (the looks' levels
    sum to alpha: a union bound, conservative)."""
    wrong = sum(bool(run_race({"a": 1.0, "b": 1.0, "c": 1.0}, own=0.02, seed=s).eliminated)
                for s in range(200))
    assert wrong / 200 <= 0.05


def test_posterior_is_a_distribution_and_favours_the_better():
    values = {"a": {r: 100.0 + r % 3 for r in range(1, 9)}, "b": {r: 90.0 + r % 2 for r in range(1, 9)}}
    post = posterior(values, ["a", "b"], "higher")
    assert sum(p.p_best for p in post.values()) == pytest.approx(1.0)
    assert post["a"].p_best == 1.0 and post["a"].expected_loss == 0.0
    assert post["b"].expected_loss == pytest.approx(1 - np.mean([90 + r % 2 for r in range(1, 9)]) /
                                                        np.mean([100 + r % 3 for r in range(1, 9)]), abs=0.01)
    same = posterior({"a": {1: 1.0, 2: 2.0, 3: 1.5}, "b": {1: 1.5, 2: 1.5, 3: 1.5}}, ["a", "b"], "higher")
    assert 0.2 < same["a"].p_best < 0.8


def test_smallest_detectable_difference_grows_with_noise():
    rng = np.random.default_rng(0)
    quiet = {lv: {r: math.exp(rng.normal(0, 0.01)) for r in range(1, 9)} for lv in "ab"}
    loud = {lv: {r: math.exp(rng.normal(0, 0.10)) for r in range(1, 9)} for lv in "ab"}
    assert 0 < smallest_detectable(quiet, "a", ["b"], 0.05, 1) < smallest_detectable(loud, "a", ["b"], 0.05, 1)


def test_smallest_detectable_projected_to_more_rounds():
    """What the first look says a decide can reach: the same noise over more rounds finds
    smaller differences (the t quantiles on more degrees of freedom, sd / sqrt(rounds));
    the projection to the rounds run is the figure itself. Checked against scipy's
    noncentral t at the noise's 70% upper bound: the power there is 80%."""
    from scipy import stats
    three = {"a": {1: 1.0, 2: 1.0, 3: 1.0}, "b": {1: 0.95, 2: 1.0, 3: 0.97}}
    now = smallest_detectable(three, "a", ["b"], 0.05, 1)
    assert smallest_detectable(three, "a", ["b"], 0.05, 1, rounds=3) == now
    ten = smallest_detectable(three, "a", ["b"], 0.05, 1, rounds=10)
    sd = np.std(np.log([0.95, 1.0, 0.97]), ddof=1) * math.sqrt(2 / stats.chi2.ppf(0.3, 2))
    power = stats.nct.sf(stats.t.ppf(1 - 0.025, 9), 9, math.log1p(ten) * math.sqrt(10) / sd)
    assert power == pytest.approx(0.8, abs=1e-8) and ten < now


def test_catalogue_candidates_vary_one_option_and_respect_safety():
    cs = from_catalogue(["zfs"], {"safe"})
    labels = [c.label for c in cs.candidates]
    assert labels[0] == "zfs" and "zfs:recordsize-8k" in labels
    rs = next(c for c in cs.candidates if c.label == "zfs:recordsize-8k")
    assert rs.spec.properties == {"recordsize": "8k"} and rs.safety == "safe"
    assert all(c.safety == "safe" for c in cs.candidates)
    ext4 = from_catalogue(["ext4"], {"safe"})
    assert any("data=writeback" in line for line in ext4.left_out)           # a trade, said
    traded = from_catalogue(["ext4"], {"safe", "trade"})
    wb = next(c for c in traded.candidates if c.changed == "data=writeback")
    assert wb.safety == "trade" and wb.trades and wb.spec.mount_options == ["data=writeback"]
    with pytest.raises(FslabError, match="--max-candidates"):
        from_catalogue(["btrfs"], {"safe", "trade"}, limit=10)
    # four catalogues together are too many: the filesystems race at their defaults first
    four = from_catalogue(["ext4", "xfs", "btrfs", "zfs"], {"safe", "trade"})
    assert [c.label for c in four.candidates] == ["ext4", "xfs", "btrfs", "zfs"]
    assert len(four.left_out) == 1 and "the winner's options in the next stage" in four.left_out[0]
    assert len(from_catalogue(["ext4", "xfs"], {"safe"}).candidates) > 2     # within the limit
    only = from_catalogue(["zfs"], {"safe"}, keys={"recordsize"})
    assert {c.changed for c in only.candidates} - {"defaults"} <= {f"recordsize={x}" for x in
                                                                   ("4k", "8k", "16k", "32k", "64k", "256k", "1M")}


def test_variant_names_are_valid_and_readable():
    assert variant_name("recordsize=8k") == "recordsize-8k"
    assert variant_name("-I 512") == "I512"
    assert variant_name("-O ^has_journal") == "Ono-has_journal"


def test_a_race_whose_every_candidate_fails_stops_without_a_winner():
    from fslab.decide.race import Elimination
    race = Race(["a", "b"], "higher")
    for r in (1, 2, 3):
        for lv in race.survivors:
            race.eliminated[lv] = Elimination(lv, r, "", math.nan, (math.nan, math.nan), math.nan,
                                              math.nan, "", 0.0, failed_because="fio exit 1")
        race.look(r)
        if race.stopped:
            break
    assert race.stopped is StopReason.NONE_LEFT and race.survivors == []


def test_a_candidate_without_values_is_not_tested_and_does_not_crash_the_race():
    race = Race(["a", "b", "c"], "higher")
    for r in (1, 2, 3):
        race.record("a", r, 100.0 + r)
        race.record("b", r, 50.0 + r)
    race.look(3)
    assert "b" in race.eliminated and "c" not in race.eliminated


def test_p_best_is_not_certain_when_three_rounds_disagree_in_size():
    """a ahead in 2 of 3 rounds by 1-1.6%, behind in one by 1%: a Bayesian bootstrap over
    rounds gives whatever the resampled rounds say; the t posterior (2 degrees of freedom)
    leaves real doubt either way."""
    noisy = {"a": {1: 101.0, 2: 104.0, 3: 96.5}, "b": {1: 100.0, 2: 105.0, 3: 95.0}}
    p = posterior(noisy, ["a", "b"], "higher")["a"].p_best
    assert 0.3 < p < 0.95


def test_named_variants_are_classed_by_the_catalogue():
    from fslab.decide.candidates import named
    from fslab.plan import FilesystemSpec
    cs = named([FilesystemSpec(name="ext4"),
                FilesystemSpec(name="ext4", variant="wb", mount_options=["data=writeback"])], {"safe"})
    assert [c.label for c in cs.candidates] == ["ext4"] and "data=writeback" in cs.left_out[0]
    cs = named([FilesystemSpec(name="ext4"),
                FilesystemSpec(name="ext4", variant="wb", mount_options=["data=writeback"])],
               {"safe", "trade"})
    wb = cs.candidates[1]
    assert wb.safety == "trade" and "data=writeback" in wb.trades
    # an option fslab's catalogue does not list is never called safe, and the user's
    # naming it races it
    cs = named([FilesystemSpec(name="ext4"),
                FilesystemSpec(name="ext4", variant="dax", mount_options=["dax=never"])], {"safe"})
    dax = cs.candidates[1]
    assert dax.safety == "unknown" and "dax=never: not in fslab's catalogue" in dax.unknown
    # beside a trade it is still said
    both = named([FilesystemSpec(name="ext4"), FilesystemSpec(
        name="ext4", variant="x", mount_options=["data=writeback", "dax=never"])], {"safe", "trade"})
    x = both.candidates[1]
    assert x.safety == "trade" and "dax=never" in x.unknown and "data=writeback" in x.trades


@pytest.mark.parametrize("kind", ["pocock", "obrien-fleming", "bonferroni"])
def test_the_looks_levels_spend_exactly_alpha_and_never_more(kind):
    for min_rounds, max_rounds in ((3, 10), (3, 3), (5, 20)):
        levels = look_levels(0.05, min_rounds, max_rounds, kind)
        assert len(levels) == max_rounds - min_rounds + 1 and all(x > 0 for x in levels)
        assert sum(levels) == pytest.approx(0.05) and sum(levels) <= 0.05 + 1e-12
    assert spent(0, 0.05, kind) == 0 and spent(1, 0.05, kind) == pytest.approx(0.05)


def test_spending_functions_have_their_textbook_values():
    # Lan & DeMets (1983): Pocock-type alpha ln(1 + (e - 1) t); O'Brien-Fleming-type
    # 2 - 2 Phi(z_{alpha/2} / sqrt t): at t = 0.5, 0.0310 and 0.0056 of 0.05
    assert spent(0.5, 0.05, "pocock") == pytest.approx(0.0310, abs=5e-5)
    assert spent(0.5, 0.05, "obrien-fleming") == pytest.approx(0.00558, abs=5e-5)
    levels = look_levels(0.05, 3, 10, "pocock")
    assert levels[0] == pytest.approx(0.05 * math.log(1 + (math.e - 1) * 0.3))
    assert levels == sorted(levels, reverse=True)          # Pocock-type: the early looks get most
    with pytest.raises(ValueError):
        spent(0.5, 0.05, "nosuch")


def test_a_race_stops_when_no_survivor_can_be_delta_better_than_the_leader():
    """Others 5-8% behind at 1% own noise: too close to eliminate at once, clearly not 3%
    better than the leader: each is retired (not eliminated) with its bound, and the race
    stops with the leader once it is the only one running."""
    race = run_race({"best": 1.0, "b": 0.95, "c": 0.94, "d": 0.92}, own=0.01, seed=2)
    assert race.stopped in (StopReason.LEADER_WITHIN_DELTA, StopReason.WINNER) and race.leader() == "best"
    assert race.rounds_done < 10 and race.survivors == ["best"]
    for lv, ret in race.retired.items():
        assert ret.leader == "best" and ret.bound < 1.03 and ret.ratio < 1
        # it ran up to its retirement and no further
        assert max(race.values[lv]) == ret.round
        assert "not 3% better than best" in ret.why and "not shown worse" in ret.why
    assert set(race.retired) | set(race.eliminated) == {"b", "c", "d"}
    assert race.finalists == ["best", *[lv for lv in "bcd" if lv in race.retired]]


def test_a_far_candidate_is_retired_while_a_close_one_still_runs():
    """Retiring one at a time is what saves units: a candidate 12% behind is bounded
    rounds before one 3.5% behind at 2% own noise (neither can be eliminated soon)."""
    seen = []
    for seed in range(20):
        race = run_race({"best": 1.0, "close": 0.965, "far": 0.88}, own=0.02, drift=0.05, seed=seed)
        if "far" in race.retired and "close" in race.retired:
            seen.append(race.retired["far"].round <= race.retired["close"].round)
            assert len(race.values["far"]) <= len(race.values["close"])
    assert seen and sum(seen) >= 0.8 * len(seen)


def test_the_good_stop_never_fires_while_a_survivor_may_be_delta_better():
    values = {"a": {1: 100.0, 2: 104.0, 3: 96.0}, "b": {1: 99.0, 2: 106.0, 3: 95.0}}
    race = Race(["a", "b"], "higher")
    for lv, v in values.items():
        for r, x in v.items():
            race.record(lv, r, x)
    race.look(3)
    assert race.stopped is None and not race.eliminated


def test_the_decision_says_what_the_good_stop_shows():
    from decision_data import decision
    from fslab.decide.decision import text
    dec = dict(winner="a", verdict="tie", equivalent=False, ties=["a", "b"],
               stopped="none delta better than the leader", rounds=4, delta=0.03,
               alpha=0.05, metric="write IOPS", units_run=8, max_rounds=10,
               units_full_factorial=20, mde=0.05)
    first = text(decision(**dec))[0]
    # not "Tie: a, b": b may be far behind (retired, never shown worse)
    assert first.startswith("Choose the leader a: each of b was shown not 3% or more better "
                            "than the leader of the round it stopped running in")
    assert "none was shown worse either, in 4 rounds" in first
    # a delta under 1% keeps its digits (it printed "0%")
    assert "not 0.5% or more better" in text(decision(**{**dec, "delta": 0.005}))[0]


def test_a_lone_survivor_shares_p_best_with_the_eliminated():
    """Winner by elimination: its P(best) is not 100% by construction; the eliminated (by
    a test, on their own 3 rounds) keep their share of the same posterior (the column sums
    to 1); one whose unit failed is no choice and gets none."""
    from fslab.decide.race import Elimination
    race = Race(["best", "b", "gone"], "higher")
    for r in range(1, 11):
        race.record("best", r, 100.0 * (1 + 0.01 * (r % 3)))
    for r, x in zip((1, 2, 3), (0.97, 0.99, 0.90)):
        race.record("b", r, race.values["best"][r] * x)
    race.record("gone", 1, 50.0)
    race.eliminated["b"] = Elimination("b", 3, "best", 0.95, (0.8, 1.1), 0.01, 0.02, "t", 0.02)
    race.eliminated["gone"] = Elimination("gone", 2, "", math.nan, (math.nan, math.nan), math.nan,
                                          math.nan, "", 0.0, failed_because="mkfs failed")
    assert race.contenders == ["best", "b"]
    post = posterior(race.values, race.contenders, race.better)
    assert 0.02 < post["b"].p_best < 0.3 and post["best"].p_best < 0.98
    assert post["best"].p_best + post["b"].p_best == pytest.approx(1)

def test_posterior_of_two_is_the_paired_t_and_a_candidate_retired_early_keeps_its_own_rounds():
    """Two candidates: P(best) is the t posterior of their mean log ratio (exact, to Monte
    Carlo error). A third retired after 3 rounds, far behind, weighs with its 3 rounds and
    leaves the other two their 8: their P(best) split as in the duel."""
    rng = np.random.default_rng(4)
    a = {r: float(np.exp(rng.normal(0.0, 0.03))) for r in range(1, 9)}
    b = {r: a[r] * float(np.exp(rng.normal(0.01, 0.02))) for r in range(1, 9)}
    d = np.log([b[r] / a[r] for r in range(1, 9)])
    exact = stats.t.cdf(d.mean() / (d.std(ddof=1) / math.sqrt(8)), 7)
    duel = posterior({"a": a, "b": b}, ["a", "b"], "higher")
    assert duel["b"].p_best == pytest.approx(exact, abs=0.02)
    far = {r: a[r] * 0.7 for r in (1, 2, 3)}
    far[2] *= 1.01
    three = posterior({"a": a, "b": b, "far": far}, ["a", "b", "far"], "higher")
    assert three["far"].p_best < 0.01
    assert three["b"].p_best == pytest.approx(exact, abs=0.03)
    assert three["far"].expected_loss == pytest.approx(1 - 0.7 / math.exp(max(0, d.mean())), abs=0.03)


def test_the_expected_loss_of_a_time_is_the_share_of_it_the_best_saves_and_has_a_mean():
    """Lower is better: a candidate taking twice the best's time loses half of its time
    (1 - best / chosen); at 3 rounds the mean is the same from any seed (the '% more time'
    form has no mean under a t posterior: its Monte Carlo mean wandered from 4% to 36%)."""
    slow = {"fast": {1: 10.0, 2: 11.0, 3: 10.5}, "slow": {1: 20.0, 2: 22.5, 3: 20.5}}
    post = posterior(slow, ["fast", "slow"], "lower")
    assert post["slow"].expected_loss == pytest.approx(0.5, abs=0.02)
    rng = np.random.default_rng(3)
    close = {lv: {r: float(np.exp(rng.normal(0.02 * i, 0.03))) for r in (1, 2, 3)}
             for i, lv in enumerate(("a", "b"))}
    losses = [posterior(close, ["a", "b"], "lower", seed=s)["b"].expected_loss for s in range(8)]
    assert max(losses) - min(losses) < 0.005 and all(0 <= x < 1 for x in losses)


def test_posterior_correlation_counts_the_rounds_two_candidates_share():
    """Y ran all 10 rounds with the reference, R only the first 3: their mean ratios are
    less correlated than their ratios are (3 shared rounds of 10 and 3), so R's presence
    must not sharpen Y's P(best) (it did, to 0.98 from the duel's 0.65, when the
    correlation on the common rounds was used as is)."""
    rng = np.random.default_rng(7)
    x = {r: float(np.exp(rng.normal(0, 0.03))) for r in range(1, 11)}
    y = {r: x[r] * (1.0 if r <= 3 else float(np.exp(rng.normal(0.005, 0.03)))) for r in x}
    far = {r: x[r] * 0.8 for r in (1, 2, 3)}
    duel = posterior({"x": x, "y": y}, ["x", "y"], "higher")["y"].p_best
    three = posterior({"x": x, "y": y, "far": far}, ["x", "y", "far"], "higher")["y"].p_best
    assert three == pytest.approx(duel, abs=0.03)


def test_a_candidate_shown_far_behind_the_leader_on_its_rounds_gets_no_p_best_through_a_noisy_other():
    """A candidate retired after 5 rounds 11% behind the leader, steadily: its draws come
    from its ratio to the leader on those rounds, not through a third candidate that was
    noisy in them (through that one it kept 7% P(best), beside a 0.86-0.93 interval)."""
    leader = {r: 40000.0 * (1 + 0.01 * (r % 2)) for r in range(1, 11)}
    other = {r: leader[r] * (0.75 if r in (4, 5) else 1.0) for r in range(1, 11)}
    retired = {r: leader[r] * (0.89 + 0.004 * (r % 3)) for r in range(1, 6)}
    post = posterior({"other": other, "leader": leader, "retired": retired},
                     ["other", "leader", "retired"], "higher")
    assert post["retired"].p_best < 0.01
    assert post["retired"].expected_loss == pytest.approx(0.105, abs=0.01)


def test_no_stage_starts_after_one_the_budget_stopped_nor_once_it_is_spent(tmp_path):
    """--budget counts the whole decide: the stage after one that stopped because its
    next round would have overrun the budget does not start (it would run its first 3
    rounds past it), nor one after the budget is spent; without a budget nothing stops."""
    import time as _time
    from fslab.decide.stages import budget_stop
    from fslab.store.environment import DecideState
    from fslab.plan import DecideSection, FilesystemSpec, Plan, SuiteSpec
    from fslab.records import UnitKey
    from fslab.store import open_store
    store = open_store(tmp_path)
    plan = Plan(filesystem=[FilesystemSpec(name="ext4")], suite=[SuiteSpec(kind="fio")],
                decide=DecideSection(budget_seconds=100))
    run_id = store.create_run("", {})
    start = _time.time() - 60       # one unit of 60 s: 40 s of the budget left
    store.finish_unit(run_id, UnitKey("h", "ext4", "default", "fio", "c", "{}", 1), [], "done", None, start, None)
    assert budget_stop(store, run_id, plan, 0) is None
    assert budget_stop(store, run_id, plan.model_copy(update={"decide": DecideSection()}), 0) is None
    store.update_environment(run_id, DecideState.budget_stop_patch(0, 3))
    assert "stopped where its next round would have overrun the --budget" in budget_stop(store, run_id, plan, 0)
    assert budget_stop(store, run_id, plan, 12) is None           # another stage's stop
    plan_30 = plan.model_copy(update={"decide": DecideSection(budget_seconds=30)})
    assert budget_stop(store, run_id, plan_30, 12) == "the --budget is spent"


def test_the_reach_is_each_candidates_own_and_an_erratic_one_does_not_set_it():
    """Pooled over the pairs, one erratic candidate (zfs-fuse) made the first look say
    1462% for a race that then eliminated one 50% behind: each pair at its own noise, the
    median said, the range named."""
    from fslab.decide.posterior import detectable
    rng = np.random.default_rng(3)
    lead = {r: 100.0 * float(rng.lognormal(0, 0.05)) for r in range(1, 4)}
    quiet = {r: lead[r] * 0.9 * float(rng.lognormal(0, 0.02)) for r in lead}
    wild = {r: lead[r] * 0.2 * float(rng.lognormal(0, 0.8)) for r in lead}
    values = {"lead": lead, "quiet": quiet, "wild": wild}
    per = detectable(values, "lead", ["quiet", "wild"], 0.003, 3, rounds=10)
    assert per["quiet"] < 0.2 < 2 < per["wild"]
    assert smallest_detectable(values, "lead", ["quiet", "wild"], 0.003, 3, rounds=10) == \
        pytest.approx(np.median(list(per.values())))
    assert smallest_detectable(values, "lead", ["quiet"], 0.003, 3, rounds=10) == pytest.approx(per["quiet"])


def test_a_plain_interval_that_leaves_out_1_is_said_not_to_be_the_races_separation():
    from decision_data import decision
    from fslab.decide.decision import tail
    row = dict(fs="xfs", options="", changed="", safety="safe", trades="", rounds=10, p_best=0.01,
               expected_loss=0.08, eliminated_round=None, retired_round=None, why="not separated",
               write_amplification=None, throttle=None)
    dec = decision(winner="xfs:a", alpha_per_look=0.0033,
                   candidates=[{**row, "label": "xfs:a", "ratio": 1.0, "ratio_ci": [1.0, 1.0]},
                               {**row, "label": "xfs", "ratio": 0.92, "ratio_ci": [0.870, 0.979]},
                               {**row, "label": "xfs:b", "ratio": 0.99, "ratio_ci": [0.93, 1.05]}])
    lines = tail(dec)
    assert lines == ["xfs: a 95% interval that leaves out 1 is not a separation here: the race "
                     "separates by Holm over every pair at its look's level (0.0033 at its last "
                     "look), which plain intervals are not"]


def test_the_paired_t_gives_scipy_stats_t_numbers():
    """PairedT calls scipy.special directly (the race asks thousands of times): its p,
    intervals, bounds and detectable differences are scipy.stats.t's, to the last bit."""
    from scipy import stats
    from fslab.analysis.paired import PairedT
    for n, mean, sd in ((2, 0.1, 0.05), (3, -0.02, 0.3), (8, 0.0, 0.01), (40, 0.5, 2.0)):
        t = PairedT(n, mean, sd)
        assert t.p == float(2 * stats.t.sf(abs(mean / t.se), n - 1))
        half = float(stats.t.ppf(0.975, n - 1)) * t.se
        assert t.interval(0.95) == (mean - half, mean + half)
        q = float(stats.t.ppf(1 - 0.01, n - 1))
        assert t.one_sided_bounds(0.01) == (mean - q * t.se, mean + q * t.se)
        d = t.detectable(0.025, 0.8, rounds=n + 2)
        assert stats.nct.sf(stats.t.ppf(0.975, n + 1), n + 1, d * math.sqrt(n + 2) / sd) == \
            pytest.approx(0.8, abs=1e-8)
        assert t.noise_bound(0.7) == pytest.approx(sd * math.sqrt((n - 1) / stats.chi2.ppf(0.3, n - 1)))


def test_the_answer_and_the_race_use_one_paired_t_on_log_ratios():
    from fslab.analysis.paired import PairedT
    from fslab.analysis.pairwise import pair_test
    from fslab.decide.posterior import detectable
    a = {1: 100.0, 2: 104.0, 3: 97.0, 4: 101.0}
    b = {1: 95.0, 2: 101.0, 3: 90.0, 4: 97.0}
    rounds = np.array(sorted(a))
    t = PairedT.of_log_ratios([a[r] for r in rounds], [b[r] for r in rounds])
    answer = pair_test(np.array(list(a.values())), np.array(list(b.values())), rounds, rounds)
    lo, hi = t.interval(0.95)
    assert (answer.p, answer.ratio_ci_lo, answer.ratio_ci_hi) == (t.p, math.exp(lo), math.exp(hi))
    race = Race(["a", "b"], "higher")
    for r in rounds:
        race.record("a", r, a[r])
        race.record("b", r, b[r])
    assert race.ratio_bounds("a", "b", 0.01) == tuple(math.exp(x) for x in t.one_sided_bounds(0.01))
    assert detectable(race.values, "a", ["b"], 0.05, 1)["b"] == \
        math.exp(t.detectable(0.025, 0.8, sd=t.noise_bound(0.7))) - 1
    # the leader of the race and the posterior's reference: one rule
    from fslab.decide.posterior import _reference
    assert race.leader() == _reference(race.values, ["a", "b"], "higher") == "a"
