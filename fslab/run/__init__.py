"""Running a plan: the session, its scheduler, the local executor and the run-wide behaviours (adaptive rounds, dry run, the end-of-run summary)."""
