"""fio: its output (shared by the fio suite and `fslab import`), the page-cache policy a fio job runs under and the device and CPU accounting around it."""
from fslab.fio.parse import FioParseError, JobResult, job_measurements, load_fio_output

__all__ = ["FioParseError", "JobResult", "job_measurements", "load_fio_output"]
