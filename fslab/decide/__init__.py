"""fslab decide: the best filesystem and options for a workload, raced round by round."""
