"""A store's runs read for every output: the records, failed units left out, analysed
(load.py), and where and how they were measured (provenance.py). The report, recommend
and compare all read results through here."""
