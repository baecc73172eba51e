"""scikit-build-core metadata provider of perseus_mxnet: version `<release>+<mxnet public version>`
(2.0.0+1.9.1) and the one dependency `perseus-common==<release>` (never mxnet itself)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mxnet_info  # noqa: E402


def dynamic_metadata(field, settings=None):
    settings = settings or {}
    unknown = set(settings) - {"default-release"}
    if unknown:
        raise RuntimeError("perseus_mxnet_build: unknown settings %s (allowed: default-release)" % sorted(unknown))
    release = mxnet_info.release(settings.get("default-release", mxnet_info.DEFAULT_RELEASE))
    if field == "version":
        return "%s+%s" % (release, mxnet_info.info()["mxnet_public_version"])
    if field == "dependencies":
        return ["perseus-common==%s" % release]
    raise RuntimeError("perseus_mxnet_build provides version and dependencies, not %s" % field)
