"""The minimum meaningful difference (fslab.analysis.significance.MEANINGFUL): a pair its
test separates by less is "≈, within 1%" in every view, never "≫"."""
from __future__ import annotations

from fslab.analysis import analyze
MEANINGFUL = 0.01     # fslab.analysis.significance.MEANINGFUL, as stated in docs/statistics.md
from fslab.report.headline import headline, headline_text
from fslab.report.tables import verdict_table
from fslab.report.verdicts import ranking_line
from test_stats import frame

# write amplification of the default run: a deterministic quantity, 0.01% apart in every
# round (issue 47: "xfs ≫ ext4 (1.0001×)", "+0.0% ... Cliff's δ = 1.00 large")
ROUNDS = [1.0, 1.02, 0.99, 1.01, 1.0, 0.98]
AMPLIFICATION = {"xfs": [2.0002 * r for r in ROUNDS], "ext4": [2.0 * r for r in ROUNDS]}


def test_a_separated_pair_within_the_meaningful_difference_reads_within_not_apart():
    a = analyze(frame(AMPLIFICATION, metric="write_iops"), regression=False)
    assert ranking_line(a.tiers.iloc[0]) == "write IOPS: xfs ≈ ext4 (within 1%)"
    assert "≫" not in verdict_table(a)["verdict"].iloc[0]
    assert "≫" not in headline_text(headline(a, None))[0]      # the answer's line
    pair = a.pairs.iloc[0]
    assert pair["p_holm"] < 0.05 and pair["negligible"] and not pair["significant"]
    assert pair["verdict"] == f"≈, within {MEANINGFUL:.0%}" and "not a meaningful" in pair["note"]


def test_a_pair_beyond_the_meaningful_difference_is_still_apart():
    apart = {"xfs": [2.06 * r for r in ROUNDS], "ext4": [2.0 * r for r in ROUNDS]}
    a = analyze(frame(apart), regression=False)
    assert a.pairs.iloc[0]["significant"] and not a.pairs.iloc[0]["negligible"]
    assert "≫" in ranking_line(a.tiers.iloc[0])


def test_a_race_does_not_eliminate_a_candidate_within_the_meaningful_difference():
    """decide shows the same: a candidate 0.5% behind in every round is not "shown worse"."""
    from fslab.decide.race import Race
    race = Race(["a", "b"], "higher", delta=0.003)
    for r, x in enumerate([100, 103, 98, 101, 99, 102], 1):
        race.record("a", r, x)
        race.record("b", r, x * 0.995 * (1 + 0.0001 * (r % 2)))
        race.look(r)
    assert not race.eliminated
