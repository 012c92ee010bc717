"""The combination stage's rule (fslab/decide/combine.py, docs/decide.md): which options of
a one-at-a-time race are combined, on the real catalogues (no mounts)."""
from __future__ import annotations

import math

from fslab.decide.candidates import from_catalogue
from fslab.decide.combine import COMBINED, combine
from fslab.decide.stages import COMBINE, GIVEN, OPTIONS, SCREEN, Stage, first_kind, next_candidates, stage_plan
from fslab.plan import DecideSection, Plan


def info(fs: str, *values: str) -> dict[str, dict]:
    """The race's record of each candidate, as from_catalogue makes it."""
    out = {fs: {"fs": fs, "changed": "defaults"}}
    for v in values:
        out[f"{fs}:{v}"] = {"fs": fs, "changed": v}
    return out


def test_options_ahead_of_the_defaults_and_not_eliminated_are_combined_best_first():
    cands = info("ext4", "noatime", "discard", "inode_readahead_blks=64", "-I 512")
    ratios = {"ext4:noatime": 1.04, "ext4:discard": 0.97, "ext4:inode_readahead_blks=64": 1.10,
              "ext4:-I 512": 1.20}
    c = combine("ext4", ratios, cands, "higher", eliminated={"ext4:-I 512"})
    assert [h.value for h in c.helped] == ["inode_readahead_blks=64", "noatime"]
    spec = c.candidate.spec
    assert spec.variant == COMBINED and spec.mount_options == ["inode_readahead_blks=64", "noatime"]
    assert spec.mkfs_options == [] and c.candidate.safety == "safe"
    assert c.candidate.changed == "inode_readahead_blks=64 + noatime"
    assert "combined inode_readahead_blks=64 (+10.0%), noatime (+4.0%)" in c.summary()


def test_lower_is_better_combines_the_options_that_lowered_the_measure():
    cands = info("xfs", "noatime", "logbsize=256k", "largeio")
    c = combine("xfs", {"xfs:noatime": 0.9, "xfs:logbsize=256k": 0.95, "xfs:largeio": 1.01},
                cands, "lower", set())
    assert [h.value for h in c.helped] == ["noatime", "logbsize=256k"]


def test_one_value_per_catalogue_key_the_better_one():
    cands = info("xfs", "logbsize=64k", "logbsize=256k", "noatime")
    c = combine("xfs", {"xfs:logbsize=64k": 1.05, "xfs:logbsize=256k": 1.08, "xfs:noatime": 1.02},
                cands, "higher", set())
    assert [h.value for h in c.helped] == ["logbsize=256k", "noatime"]
    assert c.candidate.spec.mount_options == ["logbsize=256k", "noatime"]
    assert any("logbsize=64k left out" in d for d in c.dropped)


def test_conflicting_keys_keep_the_better_and_say_why():
    cands = info("btrfs", "compress=zstd", "compress-force=zstd", "noatime")
    c = combine("btrfs", {"btrfs:compress=zstd": 1.05, "btrfs:compress-force=zstd": 1.09,
                          "btrfs:noatime": 1.01}, cands, "higher", set())
    assert [h.value for h in c.helped] == ["compress-force=zstd", "noatime"]
    assert any("compress=zstd left out: the catalogue says it does not go with compress-force=zstd" in d
               for d in c.dropped)
    # marked on one side only, it still holds both ways
    c = combine("ext4", {"ext4:data=journal": 1.2, "ext4:-O ^has_journal": 1.1, "ext4:noatime": 1.01},
                info("ext4", "data=journal", "-O ^has_journal", "noatime"), "higher", set())
    assert [h.value for h in c.helped] == ["data=journal", "noatime"]


def test_mkfs_options_and_properties_merge_into_one_spec():
    c = combine("zfs", {"zfs:recordsize=8k": 1.3, "zfs:atime=off": 1.01, "zfs:ashift=12": 1.02},
                info("zfs", "recordsize=8k", "atime=off", "ashift=12"), "higher", set())
    spec = c.candidate.spec
    assert spec.properties == {"recordsize": "8k", "atime": "off"} and spec.pool_properties == {"ashift": "12"}
    c = combine("ext4", {"ext4:-I 512": 1.1, "ext4:-J size=64": 1.05},
                info("ext4", "-I 512", "-J size=64"), "higher", set())
    assert c.candidate.spec.mkfs_options == ["-I", "512", "-J", "size=64"]


def test_a_trade_in_the_combination_makes_it_a_trade_that_says_what():
    c = combine("ext4", {"ext4:commit=60": 1.2, "ext4:noatime": 1.01},
                info("ext4", "commit=60", "noatime"), "higher", set())
    assert c.candidate.safety == "trade" and c.candidate.trades.startswith("commit=60: a crash loses")


def test_none_or_one_helped_is_no_combination_said_in_one_line():
    cands = info("ext4", "noatime", "discard")
    none = combine("ext4", {"ext4:noatime": 0.99, "ext4:discard": 0.9}, cands, "higher", set())
    assert none.candidate is None and none.helped == []
    assert none.summary().startswith("ext4: no option beat its defaults")
    one = combine("ext4", {"ext4:noatime": 1.02, "ext4:discard": math.nan}, cands, "higher", set())
    assert one.candidate is None and one.summary() == ("ext4: only noatime (+2.0%) beat its defaults "
                                                       "(ahead by its point estimate): nothing to combine")


def _plan(cs) -> Plan:
    return Plan(filesystem=[c.spec for c in cs.candidates], decide=DecideSection(
        candidates={c.label: {k: v for k, v in c.as_dict().items()
                              if k in ("safety", "trades", "changed", "effect", "origin")}
                    for c in cs.candidates}))


def test_stage_kinds_follow_from_what_stage_1_raced():
    assert first_kind(_plan(from_catalogue(["ext4"], {"safe"}, {"noatime"}))) == OPTIONS
    screen = _plan(from_catalogue(["ext4", "xfs", "btrfs", "zfs"], {"safe"}, None, 40))
    assert first_kind(screen) == SCREEN
    assert first_kind(Plan(decide=DecideSection(candidates={"ext4": {"changed": "defaults"}}))) == GIVEN
    # the screen's winner gets its catalogue, one option at a time, in the next stage
    from decision_data import decision
    dec = decision(winner="xfs", verdict="winner", stopped="one left")
    kind, cands, lines = next_candidates(Stage(SCREEN, screen, 0, {}), dec, None, "", 3, 40)
    assert kind == OPTIONS and cands[0].label == "xfs" and all(c.spec.name == "xfs" for c in cands)
    assert lines[0] == "xfs is the winner: its catalogue, one option at a time"


def test_a_later_stage_has_fresh_rounds_a_new_seed_and_the_same_race_rules():
    cs = from_catalogue(["ext4"], {"safe"}, {"noatime"})
    base = _plan(cs).model_copy(update={"decide": DecideSection(delta=0.05, max_rounds=7)})
    p = stage_plan(base, 2, first=6, cands=cs.candidates)
    assert p.iterations == 6 and p.run.seed == (base.run.seed or 42) + 1
    assert p.decide.delta == 0.05 and p.decide.max_rounds == 7
    assert "[decide]" in p.source_text and COMBINE == "combine"


def test_a_refused_combination_loses_its_weakest_option_while_two_are_left():
    c = combine("xfs", {"xfs:-i size=2048": 1.3, "xfs:-b size=1024": 1.2, "xfs:noatime": 1.1},
                info("xfs", "-i size=2048", "-b size=1024", "noatime"), "higher", set())
    assert c.candidate.spec.mkfs_options == ["-i", "size=2048", "-b", "size=1024"]
    w = c.weaker()
    assert [h.value for h in w.helped] == ["-i size=2048", "-b size=1024"] and w.candidate is not None
    assert w.weaker().candidate is None and len(w.weaker().helped) == 1


def test_a_refused_combination_loses_the_weakest_option_its_refusal_names():
    """mkfs.xfs refused -i size=2048 with -b size=2048 (seen in a 3-stage decide): the
    weakest of the mkfs options it names goes, the mount options stay (before, the
    weakest of all went first: noatime, then the next, one refusal each)."""
    cands = info("xfs", "-d agcount=2", "logbsize=64k", "-i size=2048", "-b size=2048", "noatime")
    ratios = {"xfs:-d agcount=2": 1.19, "xfs:logbsize=64k": 1.18, "xfs:-i size=2048": 1.17,
              "xfs:-b size=2048": 1.137, "xfs:noatime": 1.089}
    c = combine("xfs", ratios, cands, "higher", set())
    assert [h.value for h in c.helped] == ["-d agcount=2", "logbsize=64k", "-i size=2048",
                                           "-b size=2048", "noatime"]
    why = ("mkfs.xfs -d agcount=2 -i size=2048 -b size=2048 refused: allowable inode size "
           "with 2048 byte blocks is between 256 and 1024")
    w = c.weaker(why)
    assert [h.value for h in w.helped] == ["-d agcount=2", "logbsize=64k", "-i size=2048", "noatime"]
    assert w.candidate.spec.mkfs_options == ["-d", "agcount=2", "-i", "size=2048"]
    assert w.candidate.spec.mount_options == ["logbsize=64k", "noatime"]
    # a refusal that names none of them: the weakest of all goes
    assert [h.value for h in c.weaker("timed out").helped][-1] == "-b size=2048"


def test_a_refusal_names_an_option_by_its_words_not_a_part_of_one():
    cands = info("btrfs", "compress=zstd", "ssd", "noatime")
    c = combine("btrfs", {"btrfs:compress=zstd": 1.2, "btrfs:ssd": 1.1, "btrfs:noatime": 1.05},
                cands, "higher", set())
    # 'ssd' inside 'nossd' or 'ssd_spread' is not the ssd option: the weakest of the named goes
    w = c.weaker("mount -o compress=zstd,nossd,noatime refused: ...")
    assert [h.value for h in w.helped] == ["compress=zstd", "ssd"]


def test_only_options_whose_interval_is_beyond_no_gain_are_combined():
    """Issue 36: XFS largeio (+69.5%, it changes only stat()'s preferred size) and
    logbufs=4 (+49.4%) were combined on their point estimates, their intervals wide
    across 1. A decide gives the intervals: an option is combined only when its gain is
    beyond the stage's noise."""
    cands = {"xfs:largeio": {"changed": "largeio"}, "xfs:noatime": {"changed": "noatime"},
             "xfs:logbsize=256k": {"changed": "logbsize=256k"}}
    ratios = {"xfs:largeio": 1.695, "xfs:noatime": 1.08, "xfs:logbsize=256k": 1.06}
    intervals = {"xfs:largeio": (0.62, 4.6), "xfs:noatime": (1.02, 1.14),
                 "xfs:logbsize=256k": (1.01, 1.11)}
    c = combine("xfs", ratios, cands, "higher", set(), intervals)
    assert [h.value for h in c.helped] == ["noatime", "logbsize=256k"]
    assert c.candidate is not None and "95% interval beyond no gain" in c.summary()
    assert "at least +2.0%" in c.summary()
    noisy = combine("xfs", ratios, cands, "higher", set(),
                    {k: (0.9, 1.9) for k in intervals})
    assert noisy.candidate is None and noisy.helped == []
    assert noisy.summary().startswith("xfs: no option beat its defaults beyond the stage's noise")
    # a latency: better is lower, the interval's upper end must be under 1
    low = combine("xfs", {"xfs:noatime": 0.9}, cands, "lower", set(), {"xfs:noatime": (0.8, 1.02)})
    assert low.helped == []
