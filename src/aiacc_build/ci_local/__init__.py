"""`aiacc-build ci ...`: run the rendered CI workflow's jobs on this machine (run-local)."""
