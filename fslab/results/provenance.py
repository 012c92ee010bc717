"""Where the numbers come from, said before any number: which implementation a filesystem
name stands for (zfs: kernel OpenZFS, or the zfs-fuse daemon) and whether a guest's
emulator made them. Terminal, Markdown and HTML open their answer with these lines.

Each function reads the runs' environments, typed and keyed by run id (a loaded run's
`Loaded.environments`, or `environments_of(runs)`)."""
from __future__ import annotations

from typing import Mapping

from fslab.store.environment import RunEnvironment
from fslab.workloads.support.jobfile import io_text
from fslab.fio.cachepolicy import answer_note
from fslab.filesystems import in_memory


Environments = Mapping[str, RunEnvironment]     # run id -> its environment, in run order


def implementation_lines(environments: Environments) -> list[str]:
    """'zfs here is OpenZFS 2.3.2 kernel module', or zfs-fuse's with what that means."""
    out: list[str] = []
    for env in environments.values():
        for fs, label in env.host_implementations().items():
            line = f"{fs} here is {label}"
            if "fuse" in str(label).lower():
                # O_DIRECT opens succeed (FUSE passes them on; the run's cache policy says
                # "direct I/O (O_DIRECT)"), but the daemon reads and writes through its ARC
                line += (": a userspace port (pool v23; O_DIRECT skips the kernel's page cache "
                         "but not the daemon's own cache; work done in a daemon), "
                         f"not kernel OpenZFS; its speed and CPU say nothing about kernel "
                         f"{fs.upper()} (--target guest runs OpenZFS)")
            if line not in out:
                out.append(line)
    return out


def measured_as(environments: Environments, records) -> str:
    """How the answer's numbers were measured, for its header: the page-cache policy of the
    jobs fslab writes ('page cache off: numbers from the device'), and each job file's jobs
    as they ran, their own choice ('job file db as written: both jobs buffered'); '' when
    the runs do not say."""
    cases = set(records["case"]) if records is not None and "case" in records else set()
    job_files: dict[str, dict] = {}
    for env in environments.values():
        job_files.update(env.job_files)
    parts = []
    if set(cases) - set(job_files):   # the policy applies to fslab's own workloads only
        # true for every suite of the runs
        note = answer_note(environments.values())
        if note:
            parts.append(note)
    setups = {env.unit_setup_note() for env in environments.values()} - {""}
    if len(setups) == 1:
        parts.append(setups.pop())
    elif setups:
        parts.append("units set up differently in these runs: " + "; ".join(sorted(setups)))
    for name, jf in sorted(job_files.items()):
        if name in cases and jf.get("io"):
            parts.append(f"job file {name} as written: {io_text(jf['io'])}")
    return "; ".join(parts)


def measured_where(environments: Environments) -> list[str]:
    """Every line a reader needs before the first number: implementations, guests, then
    inputs that stood in for the study's own (aging: a generated history, not a real one)."""
    return (implementation_lines(environments) + guest_lines(environments)
            + in_memory_lines(environments) + stand_in_lines(environments))


def stand_in_lines(environments: Environments) -> list[str]:
    """'aging:git: a generated history stood in for ...', as the suite recorded it; and
    what a program's build made of its numbers ('program_note': db_bench with assertions)."""
    out: list[str] = []
    for env in environments.values():
        for key, w in sorted(env.workloads.items()):
            for said in ("stand_in", "program_note"):
                line = f"{key}: {w[said]}" if w.get(said) else None
                if line and line not in out:
                    out.append(line)
    return out


def in_memory_lines(environments: Environments) -> list[str]:
    """A run whose loop images lived in RAM (--workdir on tmpfs): no disk was measured."""
    out = []
    for run_id, env in environments.items():
        backing = env.target.get("backing") or {}
        if in_memory(str(backing.get("fstype", ""))):
            out.append(f"run {run_id or '?'}: loop images in RAM ({backing['fstype']} "
                       "work directory): numbers from memory and CPU, not from a disk")
    return out


def guest_lines(environments: Environments) -> list[str]:
    """Warnings a report must show for runs measured inside a guest (see docs/guest.md)."""
    notes = []
    for run_id, env in environments.items():
        g = env.guest
        if not g:
            continue
        where = f"run {run_id or '?'}: measured inside a qemu guest ({g.get('label', 'guest')}, " \
                f"kernel {g.get('kernel', '?')})"
        if env.emulated:
            notes.append(where + " under TCG software emulation: absolute performance is "
                         "EMULATED and says nothing about real hardware; compare these "
                         "filesystems only with each other.")
        else:
            notes.append(where + " with KVM: virtualised I/O; compare with host numbers with care.")
    return notes


def recorded_implementations(environments: Environments) -> dict[str, str]:
    """Each filesystem level's implementation as its run recorded it when mounted (keys the
    feature-claims tables): a report made on another machine must not take the host's."""
    out: dict[str, str] = {}
    for env in environments.values():
        for label, impl in env.recorded_implementations().items():
            out.setdefault(label, impl)
    return out
