"""The self-test every perseus_mxnet wheel ships, run by the local build, the CI test command and the
install script alike:

    python -m perseus.mxnet._selftest [RELEASE [MXNET_PUBLIC_VERSION]]

Imports perseus and perseus.mxnet, loads the library through the build-manifest check, checks the
manifest against the expected release and mxnet version when given and the headers' MXNET_VERSION
against the running mxnet, runs one compression op against numpy's cast, and one allreduce on a
one-process engine (the engine linked into the library). Exit 0 and one line on success; a message and
exit 1 otherwise.
"""

import sys

from perseus.horovod_kit.selftest import SelfTest

SELFTEST = SelfTest("perseus.mxnet", "mxnet", "mxnet_version")
_fail = SELFTEST.fail


def _check_manifest(lib, mx, release, framework_version):
    from perseus.mxnet import _native

    manifest = _native.build_manifest()
    SELFTEST.check_manifest(manifest, mx.__version__, release, framework_version,
                            lib.perseus_mxnet_core_version().decode())
    major, minor, patch = (int(p) for p in mx.__version__.split("+")[0].split(".")[:3])
    if lib.perseus_mxnet_header_version() != major * 10000 + minor * 100 + patch:
        _fail("compiled against mxnet headers %d, running mxnet %s" % (lib.perseus_mxnet_header_version(), mx.__version__))
    return manifest


def _check_compress(mx, np, scale):
    from perseus.mxnet import compression

    values = [0.5, -1.25, 3.0e-3, 7.0e4, float("inf"), float("nan"), 1.0e-8, -2.0]
    src = mx.nd.array(values, dtype="float32")
    dst, nonfinite = compression.compress(src, scale)
    want = (np.array(values, dtype=np.float32) * np.float32(scale)).astype(np.float16)
    got = dst.asnumpy()
    same = np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(got[~np.isnan(want)], want[~np.isnan(want)])
    want_nonfinite = int((~np.isfinite(want)).sum())
    if not same or nonfinite != want_nonfinite or dst.dtype != np.float16:
        _fail("compress gave %s (non-finite %d), numpy gives %s (non-finite %d)"
              % (got.tolist(), nonfinite, want.tolist(), want_nonfinite))
    return nonfinite


def _check_engine(np):
    from perseus import engine
    from perseus.mxnet import _engine

    _engine.use_binding_engine()
    with engine.Engine(0, 1, master_port=0) as eng:
        buf = np.arange(6, dtype=np.float32)
        eng.allreduce("selftest", buf, op="sum")
        if not np.array_equal(buf, np.arange(6, dtype=np.float32)):
            _fail("one-process allreduce changed the buffer: %s" % buf.tolist())
        return eng.info()["collectives"]


def main(argv=None):
    arguments = SELFTEST.arguments(argv)
    if arguments is None:
        return 2
    release, framework_version = arguments
    import mxnet as mx
    import numpy as np
    import perseus
    import perseus.mxnet  # noqa: F401
    from perseus.mxnet import _native

    lib = _native.load()
    manifest = _check_manifest(lib, mx, release, framework_version)
    scale = 2.0
    nonfinite = _check_compress(mx, np, scale)
    collectives = _check_engine(np)
    print("perseus %s, perseus.mxnet %s (mxnet %s, dispatch %s): compress fp32->fp16 x%.1f ok, %d non-finite; "
          "1-process engine allreduce ok (%d collectives)"
          % (perseus.__version__, manifest["version"], mx.__version__, lib.perseus_mxnet_dispatch().decode(), scale,
             nonfinite, collectives))
    return 0


if __name__ == "__main__":
    sys.exit(main())
