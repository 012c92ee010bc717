"""fio output handling shared by the fio suite and `fslab import`."""
from fslab.fio.parse import FioParseError, JobResult, job_measurements, load_fio_output

__all__ = ["FioParseError", "JobResult", "job_measurements", "load_fio_output"]
