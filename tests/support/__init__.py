"""Helpers shared by several test folders (import as `support.<module>`; tests/ is on sys.path)."""
