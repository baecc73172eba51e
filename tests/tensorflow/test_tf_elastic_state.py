"""hvd.elastic's TensorFlow states and Keras callbacks (Keras 3) in one process, without a job: what they save and
restore, what they refuse, and when the callbacks commit (the elastic jobs are tests/tensorflow/test_tf_elastic.py)."""

import pytest

from perseus.horovod_kit.elastic import ObjectState

pytestmark = pytest.mark.integration  # importing TensorFlow starts a process (platform's `uname -p`)


@pytest.fixture(scope="module")
def hvd(tf):
    import perseus.tensorflow.horovod as hvd

    return hvd


class CountedState(ObjectState):
    """A real ObjectState of one process (rank 0, broadcasts return their input) that counts its commits."""

    def __init__(self, **kwargs):
        self.commits = 0
        super().__init__(bcast_object=lambda obj: obj, get_rank=lambda: 0, **kwargs)

    def commit(self):
        self.commits += 1
        super().commit()


def test_tensorflow_state_restores_the_saved_values(tf, hvd):
    var = tf.Variable([1.0, 2.0])
    state = hvd.elastic.TensorFlowState([var], step=0)
    var.assign([5.0, 6.0])
    state.step = 3
    state.save()
    var.assign([7.0, 8.0])
    state.step = 4
    state.restore()
    assert var.numpy().tolist() == [5.0, 6.0] and state.step == 3


def test_tensorflow_state_refuses_a_session_and_no_variables(tf, hvd):
    with pytest.raises(NotImplementedError, match="not supported: .*TF1 graph or session"):
        hvd.elastic.TensorFlowState([tf.Variable(1.0)], session=object())
    with pytest.raises(ValueError, match="needs variables="):
        hvd.elastic.TensorFlowState()


def test_tensorflow_state_refuses_graph_mode(tf, hvd):
    with tf.Graph().as_default():
        with pytest.raises(NotImplementedError, match="TF1 graph or session"):
            hvd.elastic.TensorFlowState([tf.compat.v1.Variable(1.0)])


def _model(tf):
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1, momentum=0.9), loss="mse")
    return model


def test_keras_state_restores_model_and_optimizer_variables(tf, hvd):
    import numpy as np

    model = _model(tf)
    state = hvd.keras.elastic.KerasState(model, epoch=0)
    assert state.optimizer is model.optimizer and state.optimizer.built  # its variables exist before the first step
    x, y = np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32)
    model.fit(x, y, epochs=1, verbose=0)
    state.save()
    saved = [v.numpy().copy() for v in model.variables + model.optimizer.variables]
    model.fit(x, y, epochs=2, verbose=0)
    assert not np.allclose(model.variables[0].numpy(), saved[0])
    state.restore()
    for var, value in zip(model.variables + model.optimizer.variables, saved):
        assert np.array_equal(var.numpy(), value), var.name


def test_keras_state_restores_the_gradient_aggregation_cycle(tf, hvd):
    """backward_passes_per_step=2: the counter and accumulators are part of the state, created with it."""
    import numpy as np

    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
    optimizer = hvd.keras.DistributedOptimizer(tf.keras.optimizers.SGD(0.1), backward_passes_per_step=2)
    state = hvd.elastic.TensorFlowKerasState(model, optimizer)
    helper = optimizer._agg_helper
    assert len(helper.variables(model.trainable_variables)) == 1 + len(model.trainable_variables)
    # the cycle's first step only accumulates (no collective): counter 1, accumulators = the gradients
    optimizer.apply([tf.ones_like(v) for v in model.trainable_variables], model.trainable_variables)
    assert int(helper.counter.numpy()) == 1
    assert all(np.all(acc.numpy() == 1) for acc in helper.variables(model.trainable_variables)[1:])
    state.restore()
    assert int(helper.counter.numpy()) == 0
    assert all(np.all(acc.numpy() == 0) for acc in helper.variables(model.trainable_variables)[1:])


def test_keras_state_refuses_an_unbuilt_model_and_no_optimizer(tf, hvd):
    with pytest.raises(ValueError, match="must be built first"):
        hvd.elastic.TensorFlowKerasState(tf.keras.Sequential([tf.keras.layers.Dense(1)]))
    built = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
    with pytest.raises(ValueError, match="needs an optimizer"):
        hvd.elastic.TensorFlowKerasState(built)


def test_the_callbacks_commit_and_count_batches_and_epochs(tf, hvd):
    import numpy as np

    elastic = hvd.keras.elastic
    state = CountedState(epoch=5, batch=0)
    seen = []

    class Watch(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append((state.batch, state.commits))

    callbacks = [elastic.UpdateBatchStateCallback(state), elastic.UpdateEpochStateCallback(state), Watch(),
                 elastic.CommitStateCallback(state, batches_per_commit=3)]
    model = _model(tf)
    # 7 batches of 2 samples an epoch, 2 epochs: a commit every 3rd batch (counted across epochs, from fit's
    # start) and at each epoch's end
    model.fit(np.ones((14, 3), np.float32), np.zeros((14, 2), np.float32), batch_size=2, epochs=2, verbose=0,
              callbacks=callbacks)
    assert [b for b, _ in seen] == list(range(7)) * 2
    assert [c for _, c in seen] == [0, 0, 0, 1, 1, 1, 2, 3, 3, 4, 4, 4, 5, 5]
    assert state.commits == 6
    assert (state.epoch, state.batch) == (7, 0)  # 5 + the 2 epochs fit ran
    with pytest.raises(ValueError, match="batches_per_commit"):
        elastic.CommitStateCallback(state, batches_per_commit=0)


def test_the_keras_modules_reach_elastic(tf):
    import perseus.tensorflow.horovod.keras as hvd_keras
    import perseus.tensorflow.keras as keras_hvd

    assert keras_hvd.elastic is hvd_keras.elastic
    assert hvd_keras.elastic.run is not None and issubclass(hvd_keras.elastic.KerasState,
                                                            hvd_keras.elastic.TensorFlowKerasState)
    assert issubclass(hvd_keras.elastic.CommitStateCallback, tf.keras.callbacks.Callback)
