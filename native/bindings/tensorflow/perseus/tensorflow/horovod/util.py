"""Horovod's horovod.tensorflow.util helpers that user and test code reach for."""


def _executing_eagerly() -> bool:
    """Whether TensorFlow executes eagerly here (False inside a tf.function trace or a TF1 graph)."""
    import tensorflow as tf

    return tf.executing_eagerly()
