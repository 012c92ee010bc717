"""The application suites (fslab/workloads/apps/): imported here so that workload
discovery, which imports this package's modules, registers them."""
from fslab.workloads.apps import pgbench  # noqa: F401  (registers the suite)
from fslab.workloads.apps import sqlite  # noqa: F401
from fslab.workloads.apps import dbench  # noqa: F401
from fslab.workloads.apps import rocksdb  # noqa: F401
