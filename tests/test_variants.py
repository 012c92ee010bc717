"""--fs's variant syntax (fslab/plan/variants.py), the refusal of options for all, and the dry
run's option table: fast, no root."""
from __future__ import annotations

import json

import pytest

from conftest import fslab_in_process
from fslab.errors import FslabError
from fslab.run.flags import from_flags
from fslab.plan.variants import SyntaxProblem, item_text, parse_fs


def labels_and_options(text):
    return [(v.label, v.mkfs_options, v.mount_options, v.properties, v.pool_properties)
            for v in parse_fs(text)]


def test_each_variant_gets_its_own_options():
    assert labels_and_options(
        "ext4,ext4:wb[-o data=writeback,commit=30],xfs:big[-m \"-l size=64m\" -o logbsize=256k],"
        "zfs:rs[-p recordsize=8k -p compression=on -P ashift=12]") == [
        ("ext4", [], [], {}, {}),
        ("ext4:wb", [], ["data=writeback", "commit=30"], {}, {}),
        ("xfs:big", ["-l", "size=64m"], ["logbsize=256k"], {}, {}),
        ("zfs:rs", [], [], {"recordsize": "8k", "compression": "on"}, {"ashift": "12"})]


def test_quotes_repeated_flags_and_spaces():
    assert labels_and_options(" ext4:nj[ -m '-O ^has_journal'  -m -F -o noatime -o nobarrier ] , xfs ") == [
        ("ext4:nj", ["-O", "^has_journal", "-F"], ["noatime", "nobarrier"], {}, {}),
        ("xfs", [], [], {}, {})]
    # a comma or a bracket inside quotes belongs to the value
    assert labels_and_options("btrfs:c[-o 'compress=zstd:1,ssd' -m \"-L a]b\"]") == [
        ("btrfs:c", ["-L", "a]b"], ["compress=zstd:1", "ssd"], {}, {})]


@pytest.mark.parametrize("text", [
    "ext4:nj[-o noatime,nobarrier -m \"-O ^has_journal\"]", "zfs:x[-p recordsize=8k -P ashift=12]",
    "xfs:l[-m \"-l size=64m\"]", "ext4:l[-m \"-L 'a b'\"]", "ext4", "ext4:plain"])
def test_item_text_is_the_inverse_of_the_parser(text):
    v = parse_fs(text)[0]
    assert parse_fs(item_text(v))[0] == v


@pytest.mark.parametrize("text, column, words", [
    ("ext4:wb[-o", 8, "never closed"),
    ("ext4[-o noatime]", 5, "name this option set"),
    ("ext4:x[-x 1]", 8, "unknown flag '-x'"),
    ("ext4:x[-o]", 8, "-o needs a value"),
    ("ext4:x[-m -O ^has_journal]", 14, "'^has_journal' follows no flag"),
    ("ext4,,xfs", 6, "expected a filesystem name"),
    ("ext4:x[-p recordsize]", 11, "expected KEY=VALUE"),
    ("ext4:x[-o a,,b]", 11, "an empty mount option"),
    ("ext4:x[-o 'a]", 11, "quote ' opened here is never closed"),
    ("ext4:x]", 7, "expected ',' or the end"),
    ("ext4:", 6, "expected a variant name"),
    ("", 1, "no filesystem named"),
])
def test_mistakes_are_one_line_naming_the_column(text, column, words):
    with pytest.raises(SyntaxProblem) as e:
        parse_fs(text)
    message = str(e.value)
    assert "\n" not in message and e.value.code == 2
    assert f"column {column}:" in message and words in message, message


def plan_of(fs, mkfs=None, mount=None, plan_file=None):
    return from_flags(plan_file, fs, None, "smoke", None, None, [], mkfs, mount)


def test_a_variant_keeps_its_options_in_the_stored_plan():
    p = plan_of("ext4,ext4:wb[-o data=writeback]")
    assert [(f.label, f.mount_options) for f in p.filesystem] == [("ext4", []),
                                                                  ("ext4:wb", ["data=writeback"])]
    assert 'variant = "wb"' in p.source_text and '"data=writeback"' in p.source_text


def test_options_for_all_are_refused_when_variants_differ():
    with pytest.raises(FslabError) as e:   # the issue's own example: both got the option
        plan_of("ext4,ext4:wb", mount="data=writeback")
    assert str(e.value) == ("--mount-options would give ext4 and ext4:wb the same options (it "
                            "applies to every filesystem): give each variant its own, e.g. "
                            "--fs 'ext4,ext4:wb[-o data=writeback]'")
    with pytest.raises(FslabError, match=r"ext4:wb has options of its own.*--fs "
                                         r"'ext4:wb\[-o data=writeback -m \"-O \^has_journal\"\]'"):
        plan_of("ext4,ext4:wb[-o data=writeback]", mkfs="-O ^has_journal")
    # one variant per filesystem: the flags still mean "every filesystem"
    p = plan_of("ext4,xfs", mount="noatime")
    assert [f.mount_options for f in p.filesystem] == [["noatime"], ["noatime"]]


def test_a_plan_file_gains_a_bracketed_variant(tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text('[[filesystem]]\nname = "ext4"\n\n[[filesystem]]\nname = "ext4"\n'
                    'variant = "j"\nmount_options = ["data=journal"]\n\n[[filesystem]]\nname = "xfs"\n')
    p = plan_of("ext4,ext4:wb[-o data=writeback]", plan_file=plan)
    assert [(f.label, f.mount_options) for f in p.filesystem] == [
        ("ext4", []), ("ext4:j", ["data=journal"]), ("ext4:wb", ["data=writeback"])]
    with pytest.raises(FslabError, match="already has a variant ext4:j"):
        plan_of("ext4:j[-o noatime]", plan_file=plan)
    with pytest.raises(FslabError, match="ext4:j has options of its own"):
        plan_of("ext4", mount="noatime", plan_file=plan)


def test_properties_only_where_the_filesystem_takes_them():
    from fslab.run import validate
    with pytest.raises(FslabError, match="ext4 takes no properties") as e:
        validate.plan(plan_of("ext4:x[-p recordsize=8k]"))
    assert e.value.code == 2
    validate.plan(plan_of("zfs:x[-p recordsize=8k]"))


def test_dry_run_shows_every_variants_options(tmp_path):
    fs = "ext4,ext4:wb[-o data=writeback,commit=30 -m \"-O ^has_journal\"],zfs:rs[-p recordsize=8k]"
    p = fslab_in_process("run", "--fs", fs, "--profile", "smoke", "--dry-run", "--json",
                         "--results", str(tmp_path / "r"))
    got = {f["filesystem"]: f for f in json.loads(p.stdout)["filesystem_options"]}
    assert got["ext4"]["mount_options"] == [] and got["ext4"]["as_typed"] == "ext4"
    assert got["ext4:wb"]["mount_options"] == ["data=writeback", "commit=30"]
    assert got["ext4:wb"]["mkfs_options"] == ["-O", "^has_journal"]
    assert got["zfs:rs"]["properties"] == {"recordsize": "8k"}
    text = fslab_in_process("run", "--fs", fs, "--profile", "smoke", "--dry-run",
                            "--results", str(tmp_path / "r")).stdout
    table = text[text.index("Options per filesystem"):text.index("page cache")]
    assert "ext4:wb" in table and "zfs:rs" in table
    mount_row = next(line for line in table.splitlines() if "mount options" in line)
    assert "defaults" in mount_row and "data=writeback,commit=30" in mount_row
    assert not (tmp_path / "r").exists()   # a dry run creates nothing


def test_one_label_rule_for_a_variant_everywhere():
    """The plan, --fs's parser and the analysis name a variant by the one rule
    (fslab.records.level_label): the default variant goes unnamed."""
    import pandas as pd
    from fslab.analysis.groups import FS_FACTOR, level_labels
    from fslab.records import level_label
    assert [level_label("ext4", v) for v in ("default", None, "lazy")] == ["ext4", "ext4", "ext4:lazy"]
    plan = from_flags(None, "ext4,zfs:dedup[-p dedup=on]", None, "smoke", None, None, [], None, None)
    parsed = parse_fs("ext4,zfs:dedup[-p dedup=on]")
    records = pd.DataFrame({"fs": ["ext4", "zfs"], "variant": ["default", "dedup"]})
    assert ([s.label for s in plan.filesystem] == [v.label for v in parsed]
            == list(level_labels(records, FS_FACTOR)) == ["ext4", "zfs:dedup"])


def test_many_filesystems_options_are_a_row_each_in_the_terminal():
    """A 27-candidate decide's report folded every name and option into 3-letter slivers
    (a column per candidate); past 6 the table has a row per filesystem."""
    from rich.console import Console
    from fslab.report.options import print_table
    names = [f"ext4:inode_readahead_blks-{2 ** i}" for i in range(27)]
    columns = [(n, {"mkfs": "", "mount": f"inode_readahead_blks={2 ** i}"}) for i, n in enumerate(names)]
    console = Console(width=160, record=True, color_system=None)
    print_table(columns, console)
    lines = console.export_text().splitlines()
    assert any("filesystem" in line and "mkfs options" in line and "mount options" in line
               for line in lines)
    for i, n in enumerate(names):
        assert any(n in line and f"inode_readahead_blks={2 ** i}" in line and "defaults" in line
                   for line in lines), n
    few = Console(width=160, record=True, color_system=None)
    print_table(columns[:2], few)         # a few keep a column each, a row per kind of option
    assert any(line.lstrip("│ ").startswith("mount options") for line in few.export_text().splitlines())


def test_options_in_effect_name_options_not_the_runs_mount_point():
    """A zfs unit reads back every property with its source: the options table shows the
    ones set on the dataset (the cache policy's primarycache) and those that shape its
    speed at their defaults, not where it was mounted (a directory of the run's, gone
    after it: the default run's table showed only that)."""
    from fslab.report.options import in_effect_text
    info = {"implementation": "zfs-fuse", "properties": {
        "mountpoint": {"value": "/var/tmp/fslab-6ua11pip/mnt-zfs-default-1", "source": "local"},
        "primarycache": {"value": "metadata", "source": "local"},
        "recordsize": {"value": "128K", "source": "default"}}}
    assert in_effect_text(info) == "primarycache=metadata,recordsize=128K"
    assert in_effect_text({"mount_options": "rw,noatime", "super_options": "rw,data=ordered"}) \
        == "rw,noatime,data=ordered"
