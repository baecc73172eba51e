"""The published mirror of a release: PEP 503 simple indexes, manifest.json, SHA256SUMS, and a local server.

dist/<release>/ is a complete mirror root: copied as-is to the release's mirror URL (or served by
`aiacc-build serve`), every link in it is relative and every file is checksummed.
"""
