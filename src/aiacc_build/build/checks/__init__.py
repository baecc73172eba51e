"""Post-build check scripts, run by a fresh test environment's own interpreter (Python 3.6+ syntax)."""
