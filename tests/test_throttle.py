"""A candidate's planted slowdown (throttle = "5%", fslab/fio/throttle.py): parsed, put into
every fio job, refused outside a decide, and said plainly in the decision (no mounts)."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from fslab.decide.candidates import from_file
from fslab.decide.decision import text
from fslab.errors import FslabError
from fslab.fio import throttle
from fslab.plan import throttle as spelling
from fslab.plan import DecideSection, FilesystemSpec, Plan, SuiteSpec


def test_a_throttle_is_a_percentage_or_a_fraction_up_to_half():
    assert spelling.parse("5%") == pytest.approx(0.05) and spelling.parse(0.1) == 0.1
    assert FilesystemSpec(name="ext4", variant="s", throttle="2.5%").throttle == pytest.approx(0.025)
    for bad in ("0%", "60%", "fast", -0.1):
        with pytest.raises(ValidationError, match="throttle"):
            FilesystemSpec(name="ext4", variant="s", throttle=bad)
    assert spelling.percent(0.025) == "2.5%" and spelling.percent(0.1) == "10%"


def test_the_duty_cycle_idles_the_fraction_of_every_period():
    o = throttle.fio_options(0.03)
    idle, busy = (int(o[k].removesuffix("us")) for k in ("thinktime", "thinktime_iotime"))
    assert idle + busy == throttle.PERIOD_US and idle / throttle.PERIOD_US == pytest.approx(0.03)


def test_every_job_section_gets_the_throttle_after_its_own_options():
    given = "[global]\nbs=4k\n\n[a]\nrw=randwrite\n\n[b]\nrw=randread\nsize=1m\n"
    out = throttle.into_job_text(given, 0.1).splitlines()
    assert out[:3] == ["[global]", "bs=4k", ""]       # [global] is left as it was
    a, b = out.index("[a]"), out.index("[b]")
    assert out[a + 1] == "rw=randwrite" and out[a + 3:a + 5] == ["thinktime=10000us",
                                                                 "thinktime_iotime=90000us"]
    assert out[b + 1:b + 3] == ["rw=randread", "size=1m"] and out[-2:] == ["thinktime=10000us",
                                                                         "thinktime_iotime=90000us"]
    assert throttle.conflict({"rw": "read", "thinktime": "5"}) == "thinktime"


def test_a_candidates_file_carries_the_throttle_into_the_label_and_the_options(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[[candidate]]\nname = "ext4"\nvariant = "orig"\n\n'
                 '[[candidate]]\nname = "ext4"\nvariant = "slow5"\nthrottle = "5%"\n')
    cs = from_file(f, {"safe"})
    slow = cs.candidates[1]
    assert slow.spec.throttle == pytest.approx(0.05) and slow.label == "ext4:slow5"
    assert slow.changed == "throttled 5% (a planted slowdown)"


def test_a_throttle_outside_a_decide_or_on_another_suite_is_refused():
    from fslab.run import validate
    slow = FilesystemSpec(name="ext4", variant="slow", throttle="5%")
    with pytest.raises(FslabError, match="benchmark aid of fslab decide"):
        validate.plan(Plan(filesystem=[FilesystemSpec(name="ext4"), slow], suite=[SuiteSpec(kind="fio")]))
    with pytest.raises(FslabError, match="on fio workloads"):
        validate.plan(Plan(filesystem=[FilesystemSpec(name="ext4"), slow], decide=DecideSection(),
                           suite=[SuiteSpec(kind="smallfiles")]))


def test_a_throttled_leader_gets_no_commands_and_every_line_says_it_is_planted():
    row = dict(fs="ext4", options="", changed="", safety="safe", trades="", rounds=3, p_best=0.6,
               expected_loss=0.01, ratio_ci=[None, None], eliminated_round=None,
               write_amplification=None)
    from decision_data import decision
    dec = {"run": "r", "verdict": "tie", "winner": "ext4:slow10", "ties": ["ext4:slow10", "ext4"],
           "equivalent": False, "stopped": "rounds or budget spent", "finalists": [], "metric": "write IOPS",
           "better": "higher", "delta": 0.03, "max_rounds": 10, "rounds": 10, "units_run": 20,
           "units_full_factorial": 20, "mde": 0.5, "left_out": [], "commands": [], "traded": [],
           "candidates": [{**row, "label": "ext4:slow10", "ratio": 1.0, "why": "leader", "throttle": 0.1},
                          {**row, "label": "ext4", "ratio": 0.95, "why": "not separated", "throttle": None}]}
    lines = text(decision(**dec))
    assert any("nothing to apply: ext4:slow10 is a benchmark clone throttled by 10%" in ln for ln in lines)
    assert [ln for ln in lines if "ext4:slow10  " in ln][0].endswith(
        "a planted slowdown (throttled 10%), not a configuration")
    assert not any("to apply it" in ln for ln in lines)


def test_the_html_report_shows_a_decides_decision_as_the_terminal_says_it():
    """The issue's 'HTML section': the verdict line, a forest plot of the ratios to the
    winner, the candidates' table with P(best) and status, and what (not) to apply."""
    from fslab.decide.decision import verdict_line
    from fslab.decide.result import Decision
    from fslab.report.html import _decide_view
    row = dict(fs="ext4", options="", changed="", safety="safe", trades="", rounds=5,
               expected_loss=0.01, eliminated_round=None, retired_round=None,
               write_amplification=1.05, throttle=None)
    dec = {"run": "r1", "verdict": "tie", "winner": "ext4", "ties": ["ext4", "ext4:b"],
           "equivalent": False, "stopped": "rounds or budget spent", "finalists": ["ext4", "ext4:b"],
           "metric": "write IOPS", "better": "higher", "delta": 0.03, "max_rounds": 10,
           "rounds": 10, "units_run": 23, "units_full_factorial": 30, "mde": 0.2, "left_out": [],
           "commands": ["mkfs.ext4 /dev/DEVICE"], "traded": [],
           "candidates": [{**row, "label": "ext4", "ratio": 1.0, "ratio_ci": [1.0, 1.0], "p_best": 0.7,
                           "why": "leader"},
                          {**row, "label": "ext4:b", "ratio": 0.97, "ratio_ci": [0.9, 1.04], "p_best": 0.29,
                           "why": "not separated from the leader when the race stopped"},
                          {**row, "label": "ext4:sync", "ratio": 0.2, "ratio_ci": [0.15, 0.27],
                           "p_best": 0.01, "eliminated_round": 3, "why": "round 3: 80.0% below ext4"}]}
    dec = Decision.from_json(dec)
    view = _decide_view(dec)
    assert view["head"] == verdict_line(dec)      # the page opens with the decision
    assert "<svg" in view["chart"] and "eliminated r3" in view["chart"] and "P(best) 70%" in view["chart"]
    by = {r["candidate"]: r for r in view["table"]["rows"]}
    # a tie has a leader, not a winner: the table and the axis say so
    assert by["ext4:b"]["ratio to leader (95% CI)"] == "0.97× (0.900–1.040)" and by["ext4:b"]["P(best)"] == "29%"
    assert "ratio to the leader (×)" in view["chart"] and "winner" not in view["chart"]
    assert by["ext4:sync"]["status"] == "round 3: 80.0% below ext4"
    # intervals over decades (3 noisy rounds: 0.001-38419x) on a linear axis drew every dot
    # at 0; they go on a log axis, whose ticks are decades
    wide = Decision.from_json({**Decision.to_json(dec), "candidates": [
        {**row, "label": "ext4", "ratio": 1.0, "ratio_ci": [1.0, 1.0], "p_best": 0.5, "why": "leader"},
        {**row, "label": "xfs", "ratio": 0.99, "ratio_ci": [0.0004, 38419.0], "p_best": 0.5,
         "why": "not separated from the leader when the race stopped"}]})
    wide_chart = str(_decide_view(wide)["chart"])
    assert ">10000×<" in wide_chart and ">0.001×<" in wide_chart, wide_chart
    assert ">1×<" in view["chart"] and ">0.001×<" not in view["chart"]     # narrow: linear
    # a tie the rounds could not separate: its leader's commands only as a best guess
    assert view["commands"] == ["best guess, not shown better: ext4 only leads; to apply it anyway "
                                "(a real device; fslab measured on loop images):",
                                "mkfs.ext4 /dev/DEVICE"]


def test_a_long_decision_figure_title_wraps_inside_the_figure():
    """A decide's measure over workloads ('geometric mean over workloads of p99 read
    latency, read IOPS (each time ...)') ran past the figure's right edge, cut at 'r'."""
    import re
    from fslab.report.svgplot import dot_interval
    title = ("geometric mean over workloads of p99 read latency, read IOPS (each time or latency "
             "as its inverse: higher is better) (higher is better): ratio to xfs")
    svg = dot_interval([{"label": "xfs", "value": 1.0, "lo": None, "hi": None, "note": ""},
                        {"label": "ext4", "value": 0.95, "lo": 0.6, "hi": 1.4, "note": ""}],
                       title, "ratio to the leader (×)", log=False, width=760)
    width = float(re.search(r'<svg[^>]* width="([0-9.]+)"', svg).group(1))
    lines = [t for t in re.findall(r'font-size="11"[^>]*>([^<]*)<', svg)]
    assert " ".join(lines) == title and len(lines) > 1
    assert all(8 + 6.6 * len(line) <= width for line in lines)
