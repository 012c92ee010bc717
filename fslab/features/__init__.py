"""Feature matrix: documented claims (each driver's, gathered in claims.py) per catalog row
(catalog.py), checked live by probes (fslab/workloads/probes/) that run as the `features`
suite (fslab/workloads/features.py); matrix.py joins them."""
