"""`--suite features`: the feature matrix's live probes (defined in fslab/features/suite.py)."""
from fslab.features.suite import FeaturesSuite
from fslab.workloads.base import register

register(FeaturesSuite)
