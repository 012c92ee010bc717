"""Running a plan: the session, its scheduler and the run-wide behaviours (deadlines, cache policy, device accounting)."""
