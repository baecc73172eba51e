"""The API surface of perseus.tensorflow.horovod in one process: what is not supported yet says so,
and nothing runs before hvd.init()."""
import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


@pytest.fixture(scope="module")
def hvd(ops):
    import perseus.tensorflow.horovod as module

    return module


def test_horovod_names_exist(hvd):
    for name in ("init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank", "cross_size",
                 "cross_rank", "allreduce", "grouped_allreduce", "allgather", "broadcast", "broadcast_variables",
                 "DistributedGradientTape", "DistributedOptimizer", "Compression"):
        assert callable(getattr(hvd, name)) or name == "Compression", name
    assert hvd.keras.callbacks.BroadcastGlobalVariablesCallback.__name__ == "BroadcastGlobalVariablesCallback"


def test_queries_before_init_name_the_fix(hvd):
    assert not hvd.is_initialized()
    with pytest.raises(ValueError, match=r"call hvd.init\(\) first"):
        hvd.rank()


def test_an_op_before_init_fails_naming_init(hvd, tf):
    with pytest.raises(tf.errors.FailedPreconditionError, match=r"engine is not initialised.*horovod.init\(\)"):
        hvd.allreduce(tf.constant([1.0]))


def test_broadcast_global_variables_needs_a_graph(hvd):
    with pytest.raises(RuntimeError, match=r"hvd.broadcast_variables\(model.variables, root_rank\) instead"):
        hvd.broadcast_global_variables(0)


def test_distributed_optimizer_picks_the_tf1_or_keras_wrapper(hvd, tf):
    tf1 = hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1))
    assert isinstance(tf1, tf.compat.v1.train.Optimizer) and tf1.get_name() == "DistributedGradientDescentOptimizer"
    keras_opt = hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.1))
    assert isinstance(keras_opt, tf.keras.optimizers.SGD) and keras_opt._perseus_distributed


def test_unsupported_options_fail_loudly(hvd, tf):
    with pytest.raises(NotImplementedError, match="not supported yet: backward_passes_per_step > 1 with a tf.compat.v1"):
        hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1), backward_passes_per_step=2)
    with pytest.raises(ValueError, match="gradient_predivide_factor not supported with op != Average"):
        hvd.DistributedGradientTape(tf.GradientTape(), op=hvd.Sum, gradient_predivide_factor=2.0)
    with pytest.raises(NotImplementedError, match="not supported yet: hvd.Adasum"):
        hvd.allreduce(tf.constant([1.0]), op=hvd.Adasum)


def test_every_perseus_variable_is_in_the_tensorflow_table(hvd):
    from perseus import config

    assert set(hvd.variables.TENSORFLOW) == set(config.VARIABLE_NAMES)


def test_a_variable_tensorflow_does_not_honour_warns_once(hvd):
    from perseus import config

    loaded = config.load({"PERSEUS_ACCUMULATE_N_STEPS": "4", "PERSEUS_ALLREDUCE_DTYPE": "1"})
    with pytest.warns(config.NotHonouredWarning, match="PERSEUS_ACCUMULATE_N_STEPS is set but not honoured: not supported yet"):
        assert hvd.variables.warn_not_honoured(loaded) == ["PERSEUS_ACCUMULATE_N_STEPS"]
    assert hvd.variables.warn_not_honoured(loaded) == []  # once per process


def test_prescale_of_half_precision_is_float32_math_rounded_once(hvd):
    """Horovod scales float16 in float32 and rounds once; scaling in float16 (the factor rounded to float16 first)
    differs in the last bit for some values (Horovod's test_horovod_allreduce_cpu_prescale caught it)."""
    import numpy as np
    import tensorflow as tf
    from perseus.tensorflow.horovod import collectives

    values = tf.constant(np.linspace(-100, 100, 257), dtype=tf.float16)
    factor = 0.1915194503788923
    got = collectives._scale(values, factor).numpy()
    want = (values.numpy().astype(np.float32) * np.float32(factor)).astype(np.float16)
    assert got.dtype == np.float16 and (got == want).all()
    assert not (got == (values * tf.cast(factor, tf.float16)).numpy()).all()  # the float16-math result differs
