"""The self-test every perseus_tensorflow wheel ships, run by the local build, the CI test command and
the install script alike:

    python -m perseus.tensorflow._selftest [RELEASE [TENSORFLOW_PUBLIC_VERSION]]

Imports perseus and perseus.tensorflow, loads the op library through the build-manifest check (which
refuses a wheel built for another TensorFlow, CUDA or C++ ABI), checks the manifest against the
expected release and TensorFlow version when given, runs one compression op (fp32 -> fp16 with the
gradient scale and the non-finite count) against TensorFlow's own cast, and a one-process engine
allreduce through the op library (rendezvous on a free local port). Exit 0 and one line on success;
a message and exit 1 otherwise. Python 3.6 syntax.
"""

import json
import os
import sys

from perseus.horovod_kit.selftest import SelfTest

SELFTEST = SelfTest("perseus.tensorflow", "TensorFlow", "tensorflow_version")
_fail = SELFTEST.fail


def _check_manifest(ops, tf, release, framework_version):
    manifest_text, core_version, dispatch = [t.numpy().decode() for t in ops.perseus_build_info()]
    manifest = json.loads(manifest_text)
    SELFTEST.check_manifest(manifest, tf.__version__, release, framework_version, core_version)
    return manifest, dispatch


def _check_compress(ops, tf, scale):
    values = [0.5, -1.25, 3.0e-3, 7.0e4, float("inf"), float("nan"), 1.0e-8, -2.0]
    src = tf.constant(values, dtype=tf.float32)
    dst, nonfinite = ops.perseus_compress(src, scale=scale)
    want = tf.cast(src * scale, tf.float16)
    got_bits = tf.bitcast(dst, tf.uint16).numpy().tolist()
    want_bits = tf.bitcast(want, tf.uint16).numpy().tolist()
    want_nonfinite = int(tf.reduce_sum(tf.cast(~tf.math.is_finite(tf.cast(want, tf.float32)), tf.int64)))
    if dst.dtype != tf.float16 or got_bits != want_bits or int(nonfinite) != want_nonfinite:
        _fail("compress gave bits %s (non-finite %d), TensorFlow's cast gives %s (non-finite %d)"
              % (got_bits, int(nonfinite), want_bits, want_nonfinite))
    return int(nonfinite)


def _check_engine(ops, tf):
    """rank 0 of 1: an allreduce and an allgather through the ops on the engine the op library holds."""
    from perseus.tensorflow import _engine

    engine = _engine.start_single()
    try:
        x = tf.constant([1.5, -2.0, 3.25], dtype=tf.float64)
        summed = ops.perseus_allreduce(x, tensor_name="selftest.allreduce", reduce_op="sum")
        gathered = ops.perseus_allgather(tf.reshape(x, [3, 1]), tensor_name="selftest.allgather")
        if summed.numpy().tolist() != x.numpy().tolist() or gathered.numpy().reshape(-1).tolist() != x.numpy().tolist():
            _fail("one-rank allreduce gave %s and allgather %s for %s"
                  % (summed.numpy().tolist(), gathered.numpy().tolist(), x.numpy().tolist()))
    finally:
        _engine.stop(engine)


def main(argv=None):
    arguments = SELFTEST.arguments(argv)
    if arguments is None:
        return 2
    release, framework_version = arguments
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import perseus
    import perseus.tensorflow  # noqa: F401
    import tensorflow as tf
    from perseus.tensorflow import _native

    if not tf.executing_eagerly():  # TensorFlow 1.x starts in graph mode; the checks read values eagerly
        tf.compat.v1.enable_eager_execution()
    ops = _native.load()
    manifest, dispatch = _check_manifest(ops, tf, release, framework_version)
    scale = 2.0
    nonfinite = _check_compress(ops, tf, scale)
    _check_engine(ops, tf)
    print(
        "perseus %s, perseus.tensorflow %s (TensorFlow %s, dispatch %s): compress fp32->fp16 x%.1f ok, "
        "%d non-finite; one-rank engine allreduce/allgather ok"
        % (perseus.__version__, manifest["version"], tf.__version__, dispatch, scale, nonfinite)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
