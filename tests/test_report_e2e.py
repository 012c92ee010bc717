"""The HTML of a real run (mkfs, mount, fio on small loop images) reads as a decision
document: it opens with the answer and the decision figure, names no metric by its stored
key in any title, draws latency distributions from fio's json+ bins, and renders in
headless Chromium without errors; a screenshot is kept in the tests' artifacts."""
from __future__ import annotations

import re

import pytest

from conftest import needs_root, run_fslab
from test_report import ARTIFACTS, CHROMIUM, internal_titles, render_in_chromium, store_metrics

pytestmark = [pytest.mark.e2e, needs_root(), pytest.mark.fio]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_html_of_a_real_run_opens_with_the_decision(state_dir, results, tmp_path):
    run_fslab("run", "--fs", "ext4,xfs", "--suite", "fio", "--profile", "smoke", "-n", "3",
              "--results", str(results), "--no-summary", timeout=900)
    out = tmp_path / "report.html"
    run_fslab("report", "--results", str(results), "--html", str(out), "-p", "random-io", timeout=300)
    html = out.read_text()

    # the answer, then the decision figure (a forest plot per workload), then the rest
    headings = re.findall(r'<h2 id="([^"]+)"', html)
    assert headings[:3] == ["answer", "decision", "options"], headings
    decision = html[html.index('id="decision"'):html.index('id="options"')]
    assert decision.count("<svg") >= 5 and "ratio to the best" in decision
    assert "Priorities: random-io" in html and "Other built-in priorities" not in html
    assert "completion latency" in html and "p99.9" in html      # CDFs from json+ bins

    from fslab.store.db import Store
    store = Store(results)
    try:
        assert not internal_titles(html, store_metrics(store, store.latest_run_id()))
    finally:
        store.close()

    shot = ARTIFACTS / "report-smoke-run.png"
    result = render_in_chromium(out, screenshot=shot)
    assert result["errors"] == [], result["errors"]
    assert shot.stat().st_size > 20_000
    assert all(s["width"] > 50 and s["height"] > 50 for s in result["svgs"])
