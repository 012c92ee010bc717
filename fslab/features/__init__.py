"""Feature matrix: documented claims (each driver's, gathered in claims.py) per catalog row
(catalog.py), checked live by probes (probes/) that run as the `features` suite (suite.py);
matrix.py joins them."""
