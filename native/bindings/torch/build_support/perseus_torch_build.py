"""scikit-build-core metadata provider of perseus_torch: version `<release>+<torch public version>`
(2.0.0+2.13.0) and the one dependency `perseus-common==<release>` (never torch itself).

The release comes from PERSEUS_RELEASE or native/release/DEFAULT_RELEASE (native/release/perseus_release.py); the torch
version from the torch being built against (see torch_info.py), so one source tree builds every cell.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "release"))  # native/release: the release rule

import perseus_release  # noqa: E402
import torch_info  # noqa: E402


def dynamic_metadata(field, settings=None):
    if settings:
        raise RuntimeError("perseus_torch_build takes no settings (the release is PERSEUS_RELEASE or "
                           "native/release/DEFAULT_RELEASE), got %s" % sorted(settings))
    release = perseus_release.release()
    if field == "version":
        return perseus_release.wheel_version(release, torch_info.info()["torch_public_version"])
    if field == "dependencies":
        return ["perseus-common==%s" % release]
    raise RuntimeError("perseus_torch_build provides version and dependencies, not %s" % field)
