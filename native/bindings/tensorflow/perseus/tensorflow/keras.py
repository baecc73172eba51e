"""Horovod's `horovod.keras` counterpart: `import perseus.tensorflow.keras as hvd`.

The same functions, DistributedOptimizer and callbacks as perseus.tensorflow.horovod.keras (Horovod's
`horovod.tensorflow.keras`). DistributedOptimizer follows the Keras package of the optimizer it wraps (Keras 3
`keras`, or Keras 2 `tf_keras`); the callbacks subclass the Callback of `tf.keras` (Keras 3 by default, tf_keras
with TF_USE_LEGACY_KERAS=1): with TF_USE_LEGACY_KERAS=1 build the model with tf.keras / tf_keras."""
from .horovod.keras import *  # noqa: F401,F403
from .horovod.keras import __all__  # noqa: F401
from .horovod.keras import callbacks  # noqa: F401


def __getattr__(name: str):  # type: ignore[no-untyped-def]
    """hvd.elastic (Horovod's horovod.keras.elastic): perseus.tensorflow.horovod.keras.elastic, on first use."""
    if name == "elastic":
        from .horovod.keras import elastic

        return elastic
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
