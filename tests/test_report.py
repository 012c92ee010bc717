"""The HTML report: offline, escaped, and rendered by a real browser (headless Chromium)
with no console errors and every plot drawn."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from fslab.fio.importer import import_path
from fslab.records import Record
from fslab.results.load import load
from fslab.report.html import render_html
from fslab.store.db import Store

from corpus_data import CORPUS, s2_layout

# the tests share a module-wide fixture: one worker runs them all and makes it once
pytestmark = pytest.mark.xdist_group("test_report")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
EVIL = '<script>alert("x")</script>&'


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """An imported S2 layout (one job renamed to hostile text) plus a non-fio suite."""
    tmp = tmp_path_factory.mktemp("report")
    s2_layout(tmp / "s2")
    for path in (tmp / "s2").rglob("mixed-result.json"):
        doc = json.loads(path.read_text())
        doc["jobs"][0]["jobname"] = EVIL
        path.write_text(json.dumps(doc))
    store = Store(tmp / "results")
    run_id = import_path(store, tmp / "s2", log=lambda line: None).run_id
    # a file-server-tasks-like suite: elapsed seconds and page faults, nothing fio about it
    store.add_records(
        Record(run_id, "unknown", fs, "default", "tasks", "copy-tree", "{}", it, metric, value, unit,
               better, None, 0.0)
        for fs, f in (("ext4", 1.0), ("btrfs", 1.3)) for it in (1, 2, 3)
        for metric, value, unit, better in (("elapsed", 10 * f + it / 10, "s", "lower"),
                                            ("major_faults", 3.0 * it, "count", None)))
    out = tmp / "html" / "report.html"
    render_html(load(store, [run_id]), out, store.root)
    yield out, store, run_id
    store.close()


def test_report_is_offline_and_escaped(report):
    out, _, _ = report
    html = out.read_text()
    assert EVIL not in html and "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&amp;" in html
    assert not re.search(r"<script|https?://(?!www\.w3\.org/)", html), "no scripts, no network"
    for section in ("The decision, per workload", "Verdict table", "Suite fio", "Suite tasks",
                    "Assumption checks", "Completion latency percentiles",
                    "Environment and exact plan", "How to reproduce", "Raw artifacts",
                    "Regression view"):
        assert section in html
    # the decision figure comes right after the answer, before any table
    assert html.index('id="answer"') < html.index('id="decision"') < html.index("<table")
    assert not internal_titles(html, store_metrics(report[1], report[2]))
    # tables name metrics as a person says them; the stored key is only the cell's tooltip
    # (it was visible text: "p99 read latency ↓ ... 5 read_clat_p99")
    for label, key in (("read IOPS", "read_iops"), ("p99 read latency", "read_clat_p99"), ("time", "elapsed")):
        assert f'<td title="{key}">{label}</td>' in html and f"<td>{key}</td>" not in html
    assert "<th>key</th>" not in html
    # artifact links are relative to the report and point at the raw copies
    links = re.findall(r'<a href="([^"]+)">runs/', html)
    assert links and all((out.parent / link).is_file() for link in links)


# what a reader reads as a title: headings, folded sections, table headers, captions and
# the text drawn in a figure (axis titles, panel titles, legends)
_TITLES = re.compile(r"<(h[1-6]|summary|th|figcaption|text)\b[^>]*>(.*?)</\1>", re.S)


def internal_titles(html: str, metrics: set[str]) -> list[str]:
    """Titles that name a metric by its stored key (write_clat_mean, fio_max_rss) rather
    than as a person says it."""
    keys = {m for m in metrics if "_" in m}
    found = []
    for _, text in _TITLES.findall(html):
        plain = re.sub(r"<[^>]+>", "", text)
        found += [f"{k} in {plain!r}" for k in keys if re.search(rf"(?<![\w]){re.escape(k)}(?![\w])", plain)]
    return found


def store_metrics(store, run_id: str) -> set[str]:
    return set(store.records([run_id])["metric"])


# screenshots of rendered reports, for a person to look at (kept by CI as test artifacts)
ARTIFACTS = Path(os.environ.get("FSLAB_TEST_ARTIFACTS") or Path(__file__).resolve().parent / "artifacts")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_report_renders_in_chromium_without_errors(report):
    out, _, _ = report
    result = render_in_chromium(out, screenshot=ARTIFACTS / "report-imported-s2.png")
    assert (ARTIFACTS / "report-imported-s2.png").stat().st_size > 10_000
    assert result["errors"] == [], result["errors"]
    svgs = result["svgs"]
    expected = out.read_text().count("<svg")
    assert expected >= 8 and len(svgs) == expected
    for svg in svgs:
        assert svg["width"] > 50 and svg["height"] > 50 and svg["shapes"] > 5, svg
    assert result["title"].startswith("fslab report")


# -- a tiny Chrome DevTools Protocol client over --remote-debugging-pipe (fd 3 in, fd 4 out)

class Pipe:
    def __init__(self, write_fd: int, read_fd: int):
        self.w, self.r, self.buf, self.next_id, self.events = write_fd, read_fd, b"", 0, []

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self.read()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def read(self, deadline: float = 30) -> dict:
        end = time.monotonic() + deadline
        while b"\0" not in self.buf:
            if time.monotonic() > end:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self.r, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def wait_for(self, method: str) -> None:
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self.read())


_MEASURE = """JSON.stringify({title: document.title, svgs: [...document.querySelectorAll('svg')].map(s => {
  const r = s.getBoundingClientRect();
  return {width: r.width, height: r.height, shapes: s.querySelectorAll('path,rect,circle,use,text').length};
})})"""


def render_in_chromium(page: Path, screenshot: Path | None = None, width: int = 1400,
                       height: int = 3000) -> dict:
    """Load the page in headless Chromium: its title, every SVG's size and shape count,
    the console's errors and warnings; with `screenshot`, a PNG of the page's top
    (width x height CSS pixels) is saved there."""
    to_chrome_r, to_chrome_w = os.pipe()
    from_chrome_r, from_chrome_w = os.pipe()
    profile = tempfile.mkdtemp(prefix="fslab-chromium-")

    def child_fds():      # chromium reads commands on fd 3 and answers on fd 4
        import fcntl
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_chrome_r, from_chrome_w)]
        os.dup2(high[0], 3)
        os.dup2(high[1], 4)

    proc = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--remote-debugging-pipe",
         "about:blank"],
        preexec_fn=child_fds, pass_fds=(3, 4),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(to_chrome_r)
    os.close(from_chrome_w)
    cdp = Pipe(to_chrome_w, from_chrome_r)
    try:
        target = cdp.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = cdp.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            cdp.send(f"{domain}.enable", session=session)
        cdp.events.clear()
        cdp.send("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
        cdp.wait_for("Page.loadEventFired")
        measured = cdp.send("Runtime.evaluate", {"expression": _MEASURE, "returnByValue": True},
                            session=session)
        if screenshot is not None:
            import base64
            cdp.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                            "deviceScaleFactor": 1, "mobile": False},
                     session=session)
            shot = cdp.send("Page.captureScreenshot", {"format": "png"}, session=session)
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
        errors = [e for e in cdp.events if _is_error(e)]
        cdp.send("Browser.close")
    finally:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.close(to_chrome_w)
        os.close(from_chrome_r)
        shutil.rmtree(profile, ignore_errors=True)
    return {**json.loads(measured["result"]["value"]), "errors": errors}


def _is_error(event: dict) -> bool:
    method, params = event.get("method"), event.get("params", {})
    if method == "Runtime.exceptionThrown":
        return True
    if method == "Runtime.consoleAPICalled":
        return params.get("type") in ("error", "assert", "warning")
    if method == "Log.entryAdded":
        return params.get("entry", {}).get("level") in ("error", "warning")
    return False


def test_hand_built_panels_use_matplotlibs_colours():
    """svg.PALETTE is spelled out to spare reports matplotlib's import; it must stay
    matplotlib's own default cycle, so both kinds of figure colour a level alike."""
    from matplotlib.colors import to_hex
    from fslab.report.svg import PALETTE, pyplot
    cycle = pyplot().rcParamsDefault["axes.prop_cycle"].by_key()["color"]
    assert [to_hex(c) for c in cycle] == PALETTE


def test_a_panel_of_all_zeros_draws_finite_coordinates():
    """S3 smoke: no task took a major page fault on either filesystem; the bar axis of
    zeros was 0..0 and every y coordinate in the HTML read "nan"."""
    from fslab.report.svgplot import Panel
    ax = Panel(40, 10, 200, 120)
    ax.limits((-0.5, 1.5), [0.0, 0.0, 0.0], zero=True)
    ax.line(-0.3, 0.0, 0.3, 0.0)
    ax.dots([0.0, 1.0], [0.0, 0.0])
    assert "nan" not in "".join(ax.parts) and ax.y(0.0) == 10 + 120


def test_multi_host_records_get_a_hosts_compared_section():
    """Records from two hosts (plus fio's 'all' sum) make a 'Hosts compared' section:
    each filesystem and workload, host against host, never against 'all'."""
    import pandas as pd
    from fslab.analysis import analyze
    from fslab.records import RECORD_COLUMNS
    from fslab.report.figures import FigureContext, hosts
    rows = []
    for host, speed in (("h1", 100.0), ("h2", 150.0), ("all", 250.0)):
        for fs in ("ext4", "xfs"):
            for it in range(1, 9):
                rows.append(("r1", host, fs, "default", "fio", "randread", '{"workload":"randread"}',
                             it, "read_iops", speed + it * (0.5 if fs == "xfs" else 0.4), "ops/s",
                             "higher", None, 0.0))
    records = pd.DataFrame(rows, columns=RECORD_COLUMNS)
    a = analyze(records, regression=False)
    [section] = hosts.sections(FigureContext(a, "fio", a.summary, a.data))
    assert section.title.startswith("Hosts compared (2 hosts, 2 of 2 differences significant)")
    assert section.html.count("<tr>") == 3 and "h2 vs h1" in section.html and "all vs" not in section.html
    assert "+" in section.html and "%" in section.html
    one_host = records[records["host"] == "h1"]
    b = analyze(one_host, regression=False)
    assert hosts.sections(FigureContext(b, "fio", b.summary, b.data)) == []


def test_run_summary_of_integrity_shows_what_was_detected(tmp_path):
    """'detected' has no direction (healed is better), yet it is what tells a filesystem
    that caught every flip (OpenZFS without redundancy) from one that did nothing."""
    import io
    from rich.console import Console
    from fslab.records import Measurement, UnitKey, stamp
    from fslab.run.summary import print_run_summary
    store = Store(tmp_path)
    run_id = store.create_run("[run]\n", {})
    counts = {"ext4": (0, 8, 0), "zfs": (8, 0, 0)}   # detected, silent, healed of 8 damaged
    for fs, (det, sil, hea) in counts.items():
        key = UnitKey("localhost", fs, "default", "integrity", "data", '{"damage": "data"}', 1)
        ms = [Measurement("damaged", 8, "count", None, "x"),
              Measurement("detected", det, "count", None, "x"),
              Measurement("silent", sil, "count", "lower", "x"),
              Measurement("healed", hea, "count", "higher", "x"),
              Measurement("mount_ok", 1, "bool", None, "x")]
        store.finish_unit(run_id, key, [stamp(key, run_id, m) for m in ms], "done", None,
                          time.time(), "x")
    buf = io.StringIO()
    print_run_summary(store, run_id, Console(file=buf, width=150))
    header = next(line for line in buf.getvalue().splitlines() if "filesystem" in line)
    assert re.findall(r"damaged|detected|silent|healed", header) == \
        ["damaged", "detected", "silent", "healed"]
    zfs_row = next(line for line in buf.getvalue().splitlines() if "│ zfs" in line)
    # counts are plain numbers ("8", not "8 count": issue 47)
    assert re.findall(r"│\s+(\d+) ", zfs_row)[:4] == ["8", "8", "0", "0"] and "count" not in zfs_row


def test_run_summary_of_a_smoke_run_says_beside_its_numbers_they_mean_nothing(tmp_path):
    """A smoke run's tables come before the answer and showed 2.4x differences the next run
    reversed: each table says the numbers are not meaningful; a quick run's do not."""
    import io
    from rich.console import Console
    from fslab.records import Measurement, UnitKey, stamp
    from fslab.run.summary import print_run_summary
    store = Store(tmp_path)
    out = {}
    for profile in ("smoke", "quick"):
        run_id = store.create_run("[run]\n", {}, profile=profile)
        for fs, iops in (("ext4", 19.5e3), ("xfs", 47.5e3)):
            for it in (1, 2, 3):
                key = UnitKey("localhost", fs, "default", "fio", "randwrite-qd32", "{}", it)
                ms = [Measurement("write_iops", iops * (1 + it / 100), "ops/s", "higher", "x")]
                store.finish_unit(run_id, key, [stamp(key, run_id, m) for m in ms], "done",
                                  None, time.time(), "x")
        buf = io.StringIO()
        print_run_summary(store, run_id, Console(file=buf, width=150))
        out[profile] = buf.getvalue()
    table = out["smoke"].split("fio: randwrite-qd32", 1)[1].split("median (min", 1)[0]
    assert "48" in table and "not meaningful" in table
    assert "not meaningful" not in out["quick"]


def _decision(**over):
    cand = lambda label, ratio, ci, elim=None: {
        "label": label, "options": "", "ratio": ratio, "ratio_ci": ci, "p_best": 0.5,
        "expected_loss": 0.01, "why": "finalist", "safety": "", "trades": "", "unknown": "",
        "write_amplification": None, "eliminated_round": elim, "retired_round": None,
        "throttle": None}
    stage = lambda n, first: {"stage": n, "raced": "options", "candidates": ["a", "b"],
                              "first_round": first, "rounds": 3, "seed": 1, "verdict": "winner",
                              "stopped": "one left", "winner": "xfs:nobarrier", "ties": [],
                              "why": f"stage {n} reason", "eliminated": ["xfs:largeio r3"],
                              "retired": [], "p_best": {}}
    dec = {"run": "r1", "winner": "xfs:nobarrier", "verdict": "winner", "metric": "write IOPS",
           "better": "higher", "stopped": "one left", "rounds": 5, "delta": 0.03, "units_run": 10, "max_rounds": 10,
           "units_full_factorial": 20, "mde": 0.08, "stages": [stage(1, 1), stage(2, 6)],
           "traded": [], "alpha_per_look": 0.01, "commands": ["mkfs.xfs /dev/DEVICE",
                                                               "mount -o nobarrier /dev/DEVICE /mnt"],
           "left_out": ["xfs:lb256: log size too small"], "stage_notes": [],
           "candidates": [cand("xfs:nobarrier", 1.0, [None, None]),
                          cand("xfs", 0.9, [0.85, 0.95], elim=3)]}
    from fslab.decide.result import Decision
    return Decision.from_json({**dec, **over})


def test_html_decide_section_opens_with_the_decision_and_its_commands_the_story_folded(tmp_path):
    """The decision line and what to type come first; stage lines, their why and 'not
    raced' are folded below (they opened the section, burying the decision)."""
    from fslab.report.html import _decide_view
    from jinja2 import Environment, FileSystemLoader
    v = _decide_view(_decision())
    assert v["head"].startswith("Winner: xfs:nobarrier")
    assert v["commands"][0].startswith("to apply it") and v["commands"][1:] == [
        "mkfs.xfs /dev/DEVICE", "mount -o nobarrier /dev/DEVICE /mnt"]
    assert v["lines"][0].startswith("Stage 1:") and any("stage 2 reason" in x for x in v["lines"])
    assert v["lines"][-1] == "not raced: xfs:lb256: log size too small"
    assert not any(x.startswith("Winner:") or "mkfs.xfs" in x for x in v["lines"])
    page = Path("fslab/report/templates/report.html.j2").read_text()
    section = page[page.index("Decision of fslab decide"):page.index("{% if decisions %}")]
    assert section.index("d.head") < section.index("d.commands") < section.index("<details>") \
        < section.index("for line in d.lines") < section.index("</details>")


def test_a_staged_decides_decision_figure_shows_its_final_stage_alone():
    """Stage-1 candidates beside stage-2 ones made rows above 1x under 'ratio to the best':
    restricted to the last stage, each row is its pair's own ratio to the best of them."""
    from fslab.analysis import analyze
    from fslab.report.figures.decision import chart, restricted
    from test_stats import frame
    base = np.array([100.0, 104, 97, 101, 99, 103])
    data = {"s1-fast": list(base * 1.3), "s2-a": list(base * 1.1 * np.array([1, 1.01, 0.99, 1, 1.005, 0.995])),
            "s2-b": list(base * np.array([1, 0.99, 1.01, 1, 0.995, 1.005])), "s1-slow": list(base * 0.5)}
    t = analyze(frame(data), regression=False).tiers.iloc[0].to_dict()
    r = restricted(t, {"s2-a", "s2-b"})
    assert r["order"] == ["s2-a", "s2-b"] and r["levels_info"]["s2-a"]["ratio_to_best"] == 1.0
    b = r["levels_info"]["s2-b"]
    assert b["ratio_to_best"] == pytest.approx(1 / 1.1, rel=0.02) and b["ratio_ci"][1] < 1
    assert b["separated_from_best"]
    svg = chart(r)
    assert "s1-fast" not in svg and "s1-slow" not in svg and "apart (Holm)" in svg
    assert restricted(t, set(data)) is t            # nothing left out: the group's own ranking
