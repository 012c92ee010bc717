"""Results store: `<results>/fslab.sqlite` (runs, units, records) + raw files under runs/<run_id>/."""
from fslab.store.db import SCHEMA_VERSION, Store, open_store  # noqa: F401
