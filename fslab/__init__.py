"""fslab: compare Linux filesystems with evidence."""
import os as _os

__version__ = "0.1.0"

# fslab's numeric work is many small statistics, spread over cores by forking
# (fslab/system/forked.py). BLAS thread pools in each of those processes only fight over the
# same cores: on 2 cores they cost the 10,000-file report ~1.2 s of CPU. One thread
# each, unless the user says otherwise; this must happen before numpy is imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    _os.environ.setdefault(_var, "1")
