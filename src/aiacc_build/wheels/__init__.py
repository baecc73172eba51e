"""Building the release: plan the cells, build the native core once per toolchain, each cell's binding
wheel in an isolated environment, repair, re-tag, test in a fresh environment, all through one
content-addressed cache.
"""
