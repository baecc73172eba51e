"""hvd.SyncBatchNormalization: a Keras BatchNormalization whose training-time batch statistics are those of
the global batch (every rank's), as Horovod's: each rank's mean and mean of squares averaged over the ranks,
the variance taken from them. For the Keras `tf.keras` is (Keras 3, or Keras 2 with TF_USE_LEGACY_KERAS=1)."""
from typing import Any, Dict

_classes = {}  # type: Dict[str, Any]


def _group_moments(mean: Any, variance: Any) -> Any:
    import tensorflow as tf

    from . import basics
    from .collectives import Average, allreduce

    if basics.size() == 1:
        return mean, variance
    stacked = tf.stack([mean, variance + tf.math.square(mean)])
    group_mean, group_mean_of_square = tf.unstack(allreduce(stacked, op=Average, name=None))
    return group_mean, group_mean_of_square - tf.math.square(group_mean)


def layer_class() -> Any:
    from .keras import _keras

    keras, major = _keras()
    if keras.__name__ not in _classes:
        base = keras.layers.BatchNormalization
        if major >= 3:
            def _moments(self: Any, inputs: Any, mask: Any) -> Any:
                mean, variance = base._moments(self, inputs, mask)
                return _group_moments(mean, variance)
        else:
            def _moments(self: Any, inputs: Any, reduction_axes: Any, keep_dims: Any) -> Any:
                mean, variance = base._moments(self, inputs, reduction_axes, keep_dims=keep_dims)
                return _group_moments(mean, variance)

        def __init__(self: Any, fused: Any = False, **kwargs: Any) -> None:
            if fused:
                raise ValueError("SyncBatchNormalization does not support fused=True")
            if major < 3:
                kwargs["fused"] = False
            base.__init__(self, **kwargs)

        namespace = {"_moments": _moments, "__init__": __init__, "__module__": __name__,
                     "__doc__": "BatchNormalization over the global batch of every rank (Horovod's)."}
        _classes[keras.__name__] = type("SyncBatchNormalization", (base,), namespace)
    return _classes[keras.__name__]
