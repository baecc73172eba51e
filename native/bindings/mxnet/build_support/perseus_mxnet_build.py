"""scikit-build-core metadata provider of perseus_mxnet: version `<release>+<mxnet public version>`
(2.0.0+1.9.1) and the one dependency `perseus-common==<release>` (never mxnet itself)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "release"))  # native/release: the release rule

import perseus_release  # noqa: E402
import mxnet_info  # noqa: E402


def dynamic_metadata(field, settings=None):
    if settings:
        raise RuntimeError("perseus_mxnet_build takes no settings (the release is PERSEUS_RELEASE or "
                           "native/release/DEFAULT_RELEASE), got %s" % sorted(settings))
    release = perseus_release.release()
    if field == "version":
        return perseus_release.wheel_version(release, mxnet_info.info()["mxnet_public_version"])
    if field == "dependencies":
        return ["perseus-common==%s" % release]
    raise RuntimeError("perseus_mxnet_build provides version and dependencies, not %s" % field)
