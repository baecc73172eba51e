"""scikit-build-core metadata provider of perseus_tensorflow: version `<release>+<TF public version>`
(2.0.0+2.21.0) and the one dependency `perseus-common==<release>` (never tensorflow itself).

The release comes from PERSEUS_RELEASE or the `default-release` setting in pyproject.toml; the
TensorFlow version from the TensorFlow being built against (tensorflow_info.py).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tensorflow_info  # noqa: E402


def dynamic_metadata(field, settings=None):
    settings = settings or {}
    unknown = set(settings) - {"default-release"}
    if unknown:
        raise RuntimeError("perseus_tensorflow_build: unknown settings %s (allowed: default-release)" % sorted(unknown))
    release = tensorflow_info.release(settings.get("default-release", tensorflow_info.DEFAULT_RELEASE))
    if field == "version":
        return "%s+%s" % (release, tensorflow_info.info()["tensorflow_public_version"])
    if field == "dependencies":
        return ["perseus-common==%s" % release]
    raise RuntimeError("perseus_tensorflow_build provides version and dependencies, not %s" % field)
