"""Which Keras `tf.keras` is, and what differs between Keras versions that hvd.keras and the elastic states
read (one copy for both)."""
import sys
from typing import Any, Tuple


def _major(package: Any) -> int:
    return int(str(getattr(package, "__version__", "0")).split(".")[0])


def _keras() -> Tuple[Any, int]:
    """The Keras module `tf.keras` is (Keras 3, or tf_keras / keras 2.x) and its major version."""
    import tensorflow as tf

    module = tf.keras
    name = getattr(module, "__name__", "") or type(module).__module__
    package = sys.modules.get(name.split(".")[0])
    major = _major(package)
    if major not in (2, 3):
        raise NotImplementedError("not supported: Keras %s (tf.keras is %s) in perseus.tensorflow.horovod.keras; "
                                  "Keras 2 (tf_keras, keras 2.x) and Keras 3 are"
                                  % (getattr(package, "__version__", "?"), name))
    return module, major


def _optimizer_variables(optimizer: Any) -> list:
    """Keras 3 and Keras 2's new optimizers: a `variables` property; Keras 2's legacy ones: a method."""
    found = optimizer.variables
    return list(found() if callable(found) else found)
