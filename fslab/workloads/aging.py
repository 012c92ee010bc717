"""The aging suite (study S4): age one filesystem step by step; grep it cold; compare to unaged.

Methods (cases):
  git    - Conway et al., FAST'17: `git pull` a history commit by commit (fslab/workloads/support/gitreplay.py);
           the history is a local repository (`repo = "/path"`) or a seeded generated one
  churn  - Geriatrix-style: keep the filesystem ~80% full while deleting and creating
           files until N times its size has been written

At step 0 (both filesystems fresh: the noise floor, as the study measured it; git: with
the history's first commit, the initial tree, pulled before step 0) and
every `every` steps: a cold-cache recursive grep for a string that never occurs
(cache emptied by the driver's cold_cache(): remount, or zpool export/import, plus
drop_caches; `fincore` shows what was still resident), grep cost = seconds per
GB (10^9 bytes, the study's unit) of tree; the layout score (fslab/system/fiemap.py) of
the same read order; then the unaged twin: a fresh filesystem of the same type and
options, the same tree copied onto it, grepped and scored the same way. Records
carry params {"step": k}. For git, a step is a *successful* pull (the study's x
axis): a failed pull is logged and does not count, and `stop_after` ends the
replay after that many successful pulls (the study stopped at 393).

A failed step (e.g. git exit 128) is logged with its output and the run goes on.
The aged filesystem's images and a step journal live in
<results>/runs/<run>/aging-state/<unit>/ (fslab/workloads/support/keptfs.py): after a crash,
`fslab run --resume RUN` continues from the last completed step.

Plan table:
    [[suite]]
    kind = "aging"
    workloads = ["git", "churn"]
    repo = "/path/to/linux"    # git: replay this repository's first-parent history
    repo_url = "https://..."   # git, without repo: clone this once (cached) and replay it;
                               # where the network does not allow, the generated history
                               # stands in and the report says so
    pulls = 5000               # git pulls to attempt (default: scaled from the study's 5000)
    stop_after = 393           # git: stop after this many successful pulls (default: none)
    files = 20000              # generated history: files in the initial tree
    overwrites = 10            # churn: times the filesystem's size is rewritten
    every = 50                 # measure every N steps (default: ~100 points: 50 at paper)
    image_size = "20G"         # aged image (default: sized from the tree)
    fullness = 0.8             # churn: target utilization
"""
from __future__ import annotations

import hashlib
import os
import random
import time
import zlib
from pathlib import Path
from typing import Any

import orjson

from fslab.system import fiemap
from fslab.workloads.support import gitreplay
from fslab.workloads.support.data import COPY_DATA
from fslab.errors import FslabError, StepFailed
from fslab.filesystems.base import Instance
from fslab.workloads.support.keptfs import KeptFilesystem
from fslab.plan.profiles import GiB, MiB, Profile, parse_size
from fslab.system.proc import run
from fslab.metrics import declared
from fslab.records import Measurement
from fslab.workloads.base import Case, CacheUse, Suite, UnitContext, UnitFailed, register

AGING = declared("aging")

KNOWN = {"repo", "repo_url", "pulls", "files", "overwrites", "every", "image_size", "fullness",
         "steps_per_overwrite", "stop_after"}
# the reported configuration: 5,000 pulls, a grep every 50 (the first one, 10,000 every 100,
# was abandoned); it reached 393 successful pulls
STUDY_PULLS, STUDY_POINTS, STUDY_FILES = 5000, 100, 20000
GB = 10**9
CHURN_MEDIAN, CHURN_SIGMA = 32 * 1024, 1.5


@register
class AgingSuite(Suite):
    name = "aging"
    study = "S4"
    description = "git-replay and churn aging; cold grep cost and layout score, aged vs unaged"

    def cases(self, spec, profile: Profile) -> list[Case]:
        o, names = self.options(spec, KNOWN, ("git", "churn"))
        if o.get("repo") and not Path(o["repo"], ".git").exists() and not Path(o["repo"], "HEAD").exists():
            raise FslabError(f"aging: repo {o['repo']!r} is not a git repository")
        points = max(4, profile.count(STUDY_POINTS))
        cases = []
        if "git" in names:
            pulls = int(o.get("pulls", profile.count(STUDY_PULLS, minimum=10)))
            stop = int(o["stop_after"]) if o.get("stop_after") else None
            cfg = {"pulls": pulls, "every": int(o.get("every", max(1, pulls // points))),
                   "repo": o.get("repo"), "repo_url": None if o.get("repo") else o.get("repo_url"),
                   "files": int(o.get("files", profile.count(STUDY_FILES, 300))),
                   "image_size": o.get("image_size"), "stop_after": stop}
            generated = f"generated:{cfg['files']}"
            # what was asked for: whether the URL could be fetched is known when the unit runs
            params = {"method": "git", "pulls": pulls, "every": cfg["every"],
                      "source": cfg["repo"] or (f"{cfg['repo_url']} else {generated}"
                                                if cfg["repo_url"] else generated)}
            if stop:
                params["stop_after"] = stop
            cases.append(Case("git", params, cfg))
        if "churn" in names:
            spo = int(o.get("steps_per_overwrite", 4))
            overwrites = int(o.get("overwrites", profile.count(10)))
            steps = overwrites * spo
            cfg = {"steps": steps, "steps_per_overwrite": spo,
                   "every": int(o.get("every", max(1, steps // points))),
                   "fullness": float(o.get("fullness", 0.8)), "image_size": o.get("image_size")}
            cases.append(Case("churn", {"method": "churn", "overwrites": overwrites,
                                        "every": cfg["every"], "fullness": cfg["fullness"]}, cfg))
        return cases

    def image_bytes(self, case: Case, spec, profile: Profile) -> int | None:
        size = spec.image_size or case.config.get("image_size")
        if size:
            return parse_size(size)
        if case.name == "churn":
            return ChurnAging.default_bytes(profile)
        return None   # git: sized from the history, known once it is there

    def cache_policy(self, page_cache: str) -> CacheUse:
        return CacheUse("grep on a cold cache at every policy (remount or pool export/import "
                        "and drop_caches; fincore shows what stayed resident); the pulls and "
                        "churn themselves are buffered", buffered=False)

    def describe(self, case: Case) -> dict:
        cfg = case.config
        steps = cfg.get("pulls", cfg.get("steps"))
        unit = "successful pulls" if case.name == "git" else "steps"
        until = (f", stopping after {cfg['stop_after']} successful pulls"
                 if cfg.get("stop_after") else "")
        fresh = ("the history's first commit on both, fresh" if case.name == "git"
                 else "both fresh")
        return {"parameters": dict(cfg),
                "grep_at": f"0 ({fresh}: the noise floor) and every {cfg['every']} {unit} "
                           f"up to {steps}{until}"}

    def measure(self, ctx: UnitContext, case: Case) -> list[Measurement]:
        if ctx.mountpoint_dir is not None:
            raise UnitFailed("aging needs its own filesystem images; not on --mountpoint")
        method = GitAging(ctx, case) if case.name == "git" else ChurnAging(ctx, case)
        kept = KeptFilesystem(kept_dir(ctx), ctx.driver, ctx.spec, ctx.workdir,
                              f"{ctx.spec.name}-{ctx.spec.variant}-aged-{ctx.key.iteration}",
                              method.image_bytes())
        j = kept.journal
        try:
            kept.open()
            ctx.environment["filesystem"] = kept.inst.effective()
            if kept.resumed and j.get("next_step"):
                ctx.log(f"aging {case.name}: resuming at step {j['next_step']} of {method.steps}")
                j.setdefault("resumes", []).append({"at_step": j["next_step"], "ts": time.time(),
                                                    "recovery": method.recover(kept.inst, j)})
            else:
                j.update(method=case.name, next_step=1, measurements=[], failures=[],
                         needle=needle(ctx), pull_seconds=0.0, progress=0)
                method.start(kept.inst, j)
                # step 0: both fresh, so aged vs unaged shows the noise floor
                j["measurements"] += measure_step(ctx, kept.inst, method.tree(kept.inst), 0,
                                                  j["needle"])
            ctx.note_workload(**method.describe(j))
            ctx.note_cache_policy(self)
            kept.save()
            for k in range(j["next_step"], method.steps + 1):
                before = j.setdefault("progress", k - 1)
                method.step(kept.inst, k, j)
                done = j["progress"]   # git: successful pulls so far; churn: steps
                last = k == method.steps or method.finished(j)
                measured = any(m["params"].get("step") == done for m in j["measurements"])
                if not measured and (done > before and done % method.every == 0 or last):
                    j["measurements"] += measure_step(ctx, kept.inst, method.tree(kept.inst),
                                                      done, j["needle"])
                j["next_step"] = k + 1
                kept.save()
                if method.finished(j):
                    break
        except BaseException:
            kept.close()          # keep the images and journal: --resume continues from here
            raise
        path, rel = ctx.artifact("aging-journal.json")
        path.write_bytes(orjson.dumps(j, option=orjson.OPT_INDENT_2))
        kept.discard()
        # unit and direction from the catalogue (a journal from before it holds them too)
        return [AGING.measure(d["metric"], d["value"], rel, params=d.get("params", {}))
                for d in j["measurements"]] + \
            method.summary(j, rel)


def kept_dir(ctx: UnitContext) -> Path:
    """<results>/runs/<run>/aging-state/<unit slug>: outside the unit's artifact directory,
    which the scheduler wipes before it redoes a unit."""
    root = Path(str(ctx.artifact_dir)[:-len(ctx.artifact_rel)])
    return root / "runs" / ctx.run_id / "aging-state" / ctx.key.slug()


def needle(ctx: UnitContext) -> str:
    """A string no generated file contains (the vocabulary has no 'needle', nor hex runs)."""
    return "fslab-needle-" + hashlib.sha1(str(shared_seed(ctx, "needle")).encode()).hexdigest()[:16]


def shared_seed(ctx: UnitContext, *parts: Any) -> int:
    """A seed that is the same for every filesystem of the run (ctx.seed() differs per fs):
    each filesystem must be aged by the same history and the same churn choices."""
    return zlib.crc32(repr((ctx.plan_seed, ctx.key.case, ctx.key.iteration, parts)).encode())


# --- methods -----------------------------------------------------------------

class GitAging:
    """Replay a git history into <mount>/repo, one pull per step. The history's first commit
    is the initial tree, pulled before step 0: the study's fresh partitions held the tree
    (its pull-0 grep costs, the noise floor, are of a whole checkout), and an empty
    repository would time grep's start-up on a 24 KB .git skeleton instead."""

    def __init__(self, ctx: UnitContext, case: Case):
        self.ctx, self.cfg = ctx, case.config
        self.steps, self.every = case.config["pulls"], case.config["every"]
        self.stand_in: str | None = None   # why a generated history replaced the asked one
        self.src, self.commits = self._source()    # the initial tree, then one per pull
        if len(self.commits) - 1 < self.steps:
            ctx.log(f"aging git: the history has only {len(self.commits)} commits (the "
                    f"initial tree and {max(0, len(self.commits) - 1)} to pull)")
            self.steps = max(0, len(self.commits) - 1)
        self.failures_log, _ = ctx.artifact("failed-steps.log")

    def _source(self) -> tuple[str, list[str]]:
        repo = self.cfg["repo"]
        if repo:
            return repo, gitreplay.first_parent_commits(repo, self.steps + 1)
        url = self.cfg.get("repo_url")
        if url:
            self.ctx.log(f"aging git: fetching {url} (once; kept in {gitreplay.cache_root()})")
            fetched, why = gitreplay.fetch(url)
            if fetched is not None:
                return str(fetched), gitreplay.first_parent_commits(str(fetched), self.steps + 1)
            self.stand_in = (f"a generated source history ({self.cfg['files']} files, seeded) "
                             f"stood in for {url}: {why}")
            self.ctx.log(f"aging git: {self.stand_in}")
        spec = gitreplay.HistorySpec(seed=shared_seed(self.ctx, "history"), files=self.cfg["files"],
                                     commits=self.steps)
        dest = self.ctx.workdir / f"aging-src-{spec.key()}"
        self.ctx.log(f"aging git: generating a history of {spec.files} files and "
                     f"{spec.commits} commits after them")
        return str(dest), gitreplay.generate(dest, spec)

    def image_bytes(self) -> int:
        size = self.ctx.spec.image_size or self.cfg["image_size"]   # the filesystem's wins
        if size:
            return parse_size(size)
        # room for the checkout plus every loose object the pulls leave behind
        return max(self.ctx.profile.min_image_bytes, 4 * du(self.src))

    def tree(self, inst: Instance) -> Path:
        return Path(inst.mountpoint) / "repo"

    def start(self, inst: Instance, j: dict) -> None:
        gitreplay.init_repo(self.tree(inst))
        j["source"] = {"repo": self.src, "commits": len(self.commits),
                       "history_sha": hashlib.sha1("".join(self.commits).encode()).hexdigest()}
        # the initial tree, before step 0; not a step of the x axis (no pull to age from yet)
        r = gitreplay.pull(self.tree(inst), self.src, self.commits[0])
        if not r.ok:
            raise UnitFailed(f"aging git: the initial tree ({self.commits[0][:12]}) could not "
                             f"be pulled (git exit {r.returncode}): "
                             f"{(r.stdout + r.stderr).strip()[-500:]}")
        j["initial_tree"] = self.commits[0]

    def recover(self, inst: Instance, j: dict) -> list[str]:
        # a resumed run must replay the same history it started with
        if hashlib.sha1("".join(self.commits).encode()).hexdigest() != j["source"]["history_sha"]:
            raise UnitFailed("aging git: the history to replay differs from the one this "
                             "aged filesystem started with; cannot resume")
        return gitreplay.recover(self.tree(inst))

    def step(self, inst: Instance, k: int, j: dict) -> None:
        sha = self.commits[k]        # commits[0] is the initial tree, pulled in start()
        t = time.perf_counter()
        r = gitreplay.pull(self.tree(inst), self.src, sha)
        j["pull_seconds"] += time.perf_counter() - t
        if r.ok:
            j["progress"] += 1
        else:   # log it and go on: the study's script died here and was restarted by hand
            entry = {"step": k, "sha": sha, "exit": r.returncode,
                     "output": (r.stdout + r.stderr)[-4000:]}
            j["failures"].append(entry)
            with open(self.failures_log, "a") as f:
                f.write(f"step {k} {sha}: git pull exit {r.returncode}\n{entry['output']}\n")
            self.ctx.log(f"aging git: step {k} failed (git exit {r.returncode}); continuing")

    def finished(self, j: dict) -> bool:
        return bool(self.cfg.get("stop_after")) and j["progress"] >= self.cfg["stop_after"]

    def describe(self, j: dict) -> dict:
        """Which history was replayed, for the run's environment and the report."""
        src = self.cfg["repo"] or (None if self.stand_in else self.cfg.get("repo_url"))
        return {"method": "git replay", "history": (f"repository {src} (first-parent commits, "
                                                    "oldest first)" if src else
                                                    f"generated source tree ({self.cfg['files']} "
                                                    f"files, seeded)"),
                "stand_in": self.stand_in,
                "commits": j["source"]["commits"], "history_sha1": j["source"]["history_sha"],
                "pulls": self.steps, "every": self.every, "stop_after": self.cfg.get("stop_after"),
                "x_axis": "successful pulls"}

    def summary(self, j: dict, rel: str) -> list[Measurement]:
        return [AGING.measure("successful_pulls", j.get("progress", 0), rel),
                AGING.measure("failed_steps", len(j["failures"]), rel),
                AGING.measure("pull_seconds_total", j["pull_seconds"], rel),
                AGING.measure("resumes", len(j.get("resumes", [])), rel)]


class ChurnAging:
    """Fill to `fullness`, then per step delete random files and create new ones until
    1/steps_per_overwrite of the filesystem's size has been written, staying near `fullness`."""

    def __init__(self, ctx: UnitContext, case: Case):
        self.ctx, self.cfg = ctx, case.config
        self.steps, self.every = case.config["steps"], case.config["every"]
        self.text = gitreplay.SourceText(random.Random(shared_seed(ctx, "churn-text")))

    def image_bytes(self) -> int:
        size = self.ctx.spec.image_size or self.cfg["image_size"]   # the filesystem's wins
        if size:
            return parse_size(size)
        return max(self.default_bytes(self.ctx.profile), self.ctx.driver.min_bytes)

    @staticmethod
    def default_bytes(profile: Profile) -> int:
        return 2 * profile.file_size(1 * GiB)

    def tree(self, inst: Instance) -> Path:
        return Path(inst.mountpoint) / "churn"

    def start(self, inst: Instance, j: dict) -> None:
        self.tree(inst).mkdir()
        j["written_bytes"] = self._churn(inst, random.Random(shared_seed(self.ctx, "churn", 0)), 0)

    def recover(self, inst: Instance, j: dict) -> list[str]:
        return []   # a half-finished step just leaves a few more or fewer files

    def step(self, inst: Instance, k: int, j: dict) -> None:
        total = inst.driver.capacity(inst)["total_bytes"]
        budget = total // self.cfg["steps_per_overwrite"]
        # seeded per step, so a resumed run makes the same choices as an uninterrupted one
        j["written_bytes"] += self._churn(inst, random.Random(shared_seed(self.ctx, "churn", k)), budget)
        j["progress"] = k

    def finished(self, j: dict) -> bool:
        return False

    def describe(self, j: dict) -> dict:
        return {"method": "churn (Geriatrix-style)", "steps": self.steps, "every": self.every,
                "fullness": self.cfg["fullness"], "x_axis": "steps"}

    def _churn(self, inst: Instance, rng: random.Random, budget: int) -> int:
        """Write until `budget` bytes (0: just fill to fullness); delete when above fullness."""
        root = self.tree(inst)
        files = sorted(str(p) for p in root.rglob("*") if p.is_file())
        dirs = sorted({str(root)} | {str(p) for p in root.rglob("*") if p.is_dir()})
        written = 0
        while True:
            cap = inst.driver.capacity(inst)
            used = 1 - cap["avail_bytes"] / max(1, cap["total_bytes"])
            if not budget and used >= self.cfg["fullness"] or budget and written >= budget:
                return written
            if budget and used > self.cfg["fullness"] and files:
                os.unlink(files.pop(rng.randrange(len(files))))
                continue
            if rng.random() < 0.05:   # now and then a new directory, somewhere deep
                parent = rng.choice(dirs)
                if parent.count("/") - str(root).count("/") < 6:
                    d = f"{parent}/d{rng.randrange(1 << 30):08x}"
                    os.makedirs(d, exist_ok=True)
                    dirs.append(d)
            size = gitreplay.lognormal_size(rng, CHURN_MEDIAN, CHURN_SIGMA, 512, 4 * MiB)
            path = f"{rng.choice(dirs)}/f{rng.randrange(1 << 40):010x}"
            data = "".join(self.text.chunk(size)).encode()[:size]
            try:
                with open(path, "wb") as f:
                    f.write(data)
            except OSError as e:   # ENOSPC before the target fullness: note it and stop the step
                self.ctx.log(f"aging churn: {e}; stopping this step")
                return written
            files.append(path)
            written += len(data)

    def summary(self, j: dict, rel: str) -> list[Measurement]:
        return [AGING.measure("written_bytes_total", j["written_bytes"], rel),
                AGING.measure("resumes", len(j.get("resumes", [])), rel)]


# --- measuring one step ------------------------------------------------------

def measure_step(ctx: UnitContext, aged: Instance, tree: Path, step: int, text: str) -> list[dict]:
    """Cold grep + layout on the aged tree and on an unaged copy; journal-ready dicts."""
    out: list[dict] = []

    def rec(metric, value):
        if value is not None:
            AGING.measure(metric, value)     # declared: a misnamed one fails now, not at the end
            out.append({"metric": metric, "value": float(value), "params": {"step": step}})

    a = cold_grep(aged, tree, text)
    # same type, options and image size as the aged one (ctx.filesystem would apply the
    # profile's minimum size, and a different size means a different allocator layout)
    twin = Instance(ctx.driver, ctx.spec, ctx.make_target(), ctx.workdir,
                    f"{ctx.spec.name}-{ctx.spec.variant}-unaged-{ctx.key.iteration}", aged.size_bytes)
    with twin:
        copy = Path(twin.mountpoint) / tree.name
        run([*COPY_DATA, str(tree), str(copy)], timeout=24 * 3600)
        u = cold_grep(twin, copy, text)
    for label, g in (("aged", a), ("unaged", u)):
        rec(f"grep_cost_{label}", g["cost"])
        rec(f"grep_seconds_{label}", g["seconds"])
        rec(f"layout_score_{label}", g["layout"])
        rec(f"cold_cache_resident_{label}", g["resident_bytes"])
    rec("tree_bytes", a["tree_bytes"])
    rec("tree_files", a["files"])
    rec("aging_factor", a["cost"] / u["cost"] if u["cost"] else None)
    rec("layout_measurable", a["layout"] is not None)
    if a["grep_exit"] != 1 or u["grep_exit"] != 1:
        raise StepFailed(f"grep for {text!r} exited {a['grep_exit']}/{u['grep_exit']} "
                         "(expected 1: no match); the timing would be wrong")
    ctx.log(f"aging step {step}: grep {a['cost']:.2f} s/GB aged, {u['cost']:.2f} unaged; "
            "layout " + " / ".join("not measurable" if x is None else f"{x:.3f}"
                                   for x in (a["layout"], u["layout"])))
    return out


def cold_grep(inst: Instance, tree: Path, text: str) -> dict[str, Any]:
    """Empty the caches (and show it), then time `grep -r` over the tree."""
    files = fiemap.read_order(str(tree))
    size = sum(os.lstat(f).st_size for f in files)
    try:
        lay = fiemap.layout(files)
        layout = lay.score
    except fiemap.FiemapUnsupported:
        layout = None            # ZFS: not measurable, and we do not pretend
    evidence = inst.cold_cache()
    resident = resident_bytes(files[:: max(1, len(files) // 500)])
    t = time.perf_counter()
    r = run(["grep", "-r", "-F", "--", text, str(tree)], check=False, timeout=24 * 3600)
    seconds = time.perf_counter() - t
    return {"seconds": seconds, "cost": seconds / (size / GB) if size else None,
            "tree_bytes": size, "files": len(files), "layout": layout, "grep_exit": r.returncode,
            "resident_bytes": resident, "cold_cache": evidence}


def resident_bytes(files: list[str]) -> int | None:
    """Bytes of these files still in the page cache (fincore); None if it cannot tell."""
    if not files:
        return 0
    r = run(["fincore", "--bytes", "--noheadings", "--output", "RES", *files], check=False)
    vals = [int(x) for x in r.stdout.split() if x.isdigit()]
    return sum(vals) if r.ok and len(vals) == len(files) else None


def du(path: str) -> int:
    total = 0
    for d, _, names in os.walk(path):
        for n in names:
            try:
                total += os.lstat(os.path.join(d, n)).st_size
            except OSError:
                pass
    return total
