"""scikit-build-core metadata provider of perseus_tensorflow: version `<release>+<TF public version>`
(2.0.0+2.21.0) and the one dependency `perseus-common==<release>` (never tensorflow itself).

The release comes from PERSEUS_RELEASE or native/release/DEFAULT_RELEASE (native/release/perseus_release.py); the
TensorFlow version from the TensorFlow being built against (tensorflow_info.py).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "release"))  # native/release: the release rule

import perseus_release  # noqa: E402
import tensorflow_info  # noqa: E402


def dynamic_metadata(field, settings=None):
    if settings:
        raise RuntimeError("perseus_tensorflow_build takes no settings (the release is PERSEUS_RELEASE or "
                           "native/release/DEFAULT_RELEASE), got %s" % sorted(settings))
    release = perseus_release.release()
    if field == "version":
        return perseus_release.wheel_version(release, tensorflow_info.info()["tensorflow_public_version"])
    if field == "dependencies":
        return ["perseus-common==%s" % release]
    raise RuntimeError("perseus_tensorflow_build provides version and dependencies, not %s" % field)
