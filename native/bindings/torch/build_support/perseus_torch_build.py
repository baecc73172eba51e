"""scikit-build-core metadata provider of perseus_torch: version `<release>+<torch public version>`
(1.5.0+2.13.0) and the one dependency `perseus-common==<release>` (never torch itself).

The release comes from PERSEUS_RELEASE or the `default-release` setting in pyproject.toml; the torch
version from the torch being built against (see torch_info.py), so one source tree builds every cell.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch_info  # noqa: E402


def dynamic_metadata(field, settings=None):
    settings = settings or {}
    unknown = set(settings) - {"default-release"}
    if unknown:
        raise RuntimeError("perseus_torch_build: unknown settings %s (allowed: default-release)" % sorted(unknown))
    release = torch_info.release(settings.get("default-release", torch_info.DEFAULT_RELEASE))
    if field == "version":
        return "%s+%s" % (release, torch_info.info()["torch_public_version"])
    if field == "dependencies":
        return ["perseus-common==%s" % release]
    raise RuntimeError("perseus_torch_build provides version and dependencies, not %s" % field)
