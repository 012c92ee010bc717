"""Every run says how sharp it was: per verdict the smallest difference its tests separate
at 80% power at the run's own noise (decide's minimum detectable effect), in the answer's
notes, the verdict table, the HTML and --json ("mde")."""
from __future__ import annotations

import math

import numpy as np
import pytest

from fslab.analysis import analyze
from fslab.decide.posterior import smallest_detectable
from fslab.report.headline import headline, headline_text
from fslab.report.sharpness import could_see, sharpen
from fslab.report.tables import verdict_table
from fslab.report.verdicts import ranking_line
from test_stats import frame

# two filesystems 2% apart under 10% own noise over 5 rounds: no test separates them
ROUNDS = np.array([1.0, 1.3, 0.8, 1.1, 0.9])
NOISE = {"ext4": [1.00, 1.12, 0.91, 1.05, 0.95], "xfs": [1.08, 0.93, 1.02, 0.90, 1.10]}


def tie():
    return {fs: list(100 * ROUNDS * np.array(n)) for fs, n in NOISE.items()}


def test_a_tie_says_what_its_tests_could_have_seen():
    a = analyze(frame(tie()), regression=False)
    t = sharpen(a).iloc[0]
    assert t["display"] == "one group" and t["why"] == "no significant difference"
    values = {fs: dict(enumerate(v, 1)) for fs, v in tie().items()}
    expected = smallest_detectable(values, t["order"][0], t["order"][1:], 0.05, 1)
    assert t["mde"] == pytest.approx(expected) and 0.1 < t["mde"] < 1
    shown = could_see(expected)
    assert ranking_line(t) == f"write IOPS: ~ ({shown})"
    assert verdict_table(a)["verdict"].iloc[0] == f"~ ({shown})"
    lines = headline_text(headline(a, None))
    assert lines[0].endswith(f"~ ({shown})")
    note = next(ln for ln in lines if ln.startswith("could see: the smallest difference"))
    assert f"fio:randwrite ≥ {shown.split('≥ ')[1]}" in note


def test_a_separated_verdict_keeps_its_ranking_and_says_its_mde_in_the_notes():
    a = analyze(frame(), regression=False)          # xfs clearly ahead within rounds
    t = sharpen(a).iloc[0]
    assert t["display"] != "one group" and math.isfinite(t["mde"])
    assert "could see" not in ranking_line(t)
    assert any(ln.startswith("could see") for ln in headline_text(headline(a, None))[1:])


def test_unpaired_comparisons_have_no_within_round_mde():
    df = frame(tie()).assign(run_id=lambda d: d["fs"], fs="ext4")     # two runs of one fs
    a = analyze(df, factor="run_id", regression=False)
    assert math.isnan(sharpen(a).iloc[0]["mde"]) and could_see(math.nan) == ""


def test_could_see_reads_as_percent_then_as_a_factor():
    assert could_see(0.234) == "could see ≥ 24%" and could_see(1.65) == "could see ≥ 2.7×"
    assert could_see(0.23) == "could see ≥ 23%" and could_see(12.2) == "could see ≥ 14×"


def test_could_see_never_prints_zero_and_never_less_than_the_figure():
    """Issue 47: "~ (could see ≥ 0%)" was printed for a figure under 0.5%."""
    assert could_see(0.004) == "could see ≥ 0.4%" and could_see(0.0234) == "could see ≥ 2.4%"
    assert could_see(0.00001) == "could see ≥ 0.1%"
    for x in (0.0001, 0.0049, 0.031, 0.0999, 0.5, 0.999, 1.0, 3.3):
        said = could_see(x).removeprefix("could see ≥ ")
        shown = float(said[:-1]) / 100 if said.endswith("%") else float(said[:-1]) - 1
        assert shown >= x - 1e-12 and shown > 0, (x, said)


def test_json_and_html_carry_the_mde(tmp_path):
    from fslab.report.export import verdicts_json
    a = analyze(frame(tie()), regression=False)
    v = verdicts_json(a, {})[0]
    assert v["mde"] == pytest.approx(sharpen(a).iloc[0]["mde"]) and "could see" in v["line"]
