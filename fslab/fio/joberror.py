"""A fio job's error number as a person reads it: name, meaning, and what it usually
means for a job file (fio's JSON gives only the number, and its log may say nothing)."""
from __future__ import annotations

import errno
import os

from fslab.fio.parse import JobResult

# errno -> what it means when a fio job ends with it, beyond strerror
_LIKELY = {
    errno.ENOTTY: "an ioctl the file does not take",
    errno.EOPNOTSUPP: "an operation this filesystem does not support",
    errno.ENOSPC: "the filesystem is full",
    errno.EINVAL: "an option or alignment the file does not take (direct=1 with an "
                  "unaligned bs, say)",
    errno.EILSEQ: "a verify found data that differs from what was written",
}


def describe(job: JobResult) -> str:
    """'job punch (rw=randtrim): error 25 ENOTTY (Inappropriate ioctl for device): a trim
    on a regular file: fio trims block devices only'."""
    n = job.error
    name = errno.errorcode.get(n, "?")
    rw = str(job.options.get("rw") or job.options.get("readwrite") or "")
    said = f"job {job.job_name}{f' (rw={rw})' if rw else ''}: error {n} {name} ({os.strerror(n)})"
    if "trim" in rw and n in (errno.ENOTTY, errno.EOPNOTSUPP, errno.EINVAL):
        return f"{said}: a trim on a regular file: fio trims block devices only"
    if n == errno.EILSEQ and shares_a_verified_file(job):
        return (f"{said}: its {job.options.get('numjobs')} clones write and verify the same file "
                f"({job.options.get('filename')}), each with its own seed, so each finds the "
                "others' blocks: the job file fails so under fio alone (numjobs=1 verifies)")
    likely = _LIKELY.get(n)
    return f"{said}: {likely}" if likely else said


def shares_a_verified_file(job: JobResult) -> bool:
    """numjobs > 1 clones verifying one named file: fio's e4defrag.fio example does this."""
    o = job.options
    try:
        clones = int(str(o.get("numjobs") or 1))
    except ValueError:
        return False
    return clones > 1 and bool(o.get("filename")) and str(o.get("verify") or "0") not in ("0", "null")
