"""The API surface of perseus.tensorflow.horovod in one process: what is not supported yet says so,
and nothing runs before hvd.init()."""
import pytest


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


@pytest.mark.parametrize("call", ["broadcast_global_variables", "BroadcastGlobalVariablesHook"])
def test_tf1_helpers_fail_loudly(hvd, call):
    with pytest.raises(NotImplementedError, match="not supported yet: %s" % call):
        getattr(hvd, call)(0)


def test_tf1_optimizer_and_adasum_fail_loudly(hvd, tf):
    with pytest.raises(NotImplementedError, match=r"not supported yet: DistributedOptimizer\(tf.compat.v1"):
        hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1))
    with pytest.raises(NotImplementedError, match="not supported yet: hvd.Adasum"):
        hvd.allreduce(tf.constant([1.0]), op=hvd.Adasum)
