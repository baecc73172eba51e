"""Local gradient aggregation for hvd.DistributedOptimizer(backward_passes_per_step=N), as Horovod defines it: each
step adds its gradients into this rank's accumulators; every N-th step the accumulated gradients are allreduced
(divided by N with average_aggregated_gradients) and applied, and the accumulators are zeroed. The other steps apply
nothing but still count in the optimizer's `iterations`. Eager and tf.function alike (tf.cond on the counter).

The helper sits on the optimizer as `_agg_helper` with its step `counter` (steps since the last allreduce), where
Horovod keeps them (its Keras tests read them)."""
from typing import Any, Callable, Dict, List, Optional


class LocalAggregation:
    def __init__(self, backward_passes_per_step: int, average_aggregated_gradients: bool, sparse_as_dense: bool,
                 reduce: Callable[[List[Any]], List[Any]]) -> None:
        import tensorflow as tf

        if backward_passes_per_step <= 0:
            raise ValueError("backward_passes_per_step must be > 0, not %r" % (backward_passes_per_step,))
        self.backward_passes_per_step = backward_passes_per_step
        self.average_aggregated_gradients = average_aggregated_gradients
        self.sparse_as_dense = sparse_as_dense
        self._reduce = reduce
        self.counter = tf.Variable(0, trainable=False, dtype=tf.int32, name="perseus_aggregation_counter")
        self._sums: Dict[int, Any] = {}

    def _accumulator(self, index: int, grad: Any) -> Any:
        import tensorflow as tf

        if index not in self._sums:
            with tf.init_scope():  # created once, outside any tf.function or cond branch
                self._sums[index] = tf.Variable(tf.zeros(grad.shape, grad.dtype), trainable=False,
                                                name="perseus_aggregated_grad_%d" % index)
        return self._sums[index]

    def variables(self, trainable: List[Any]) -> List[Any]:
        """The counter and an accumulator for each of `trainable` (the variables the gradients are for, in their
        order), created now if no step has yet: what an elastic state saves, restores and syncs."""
        for index, var in enumerate(trainable):
            self._accumulator(index, var)
        return [self.counter] + [self._sums[index] for index in sorted(self._sums)]

    def compute_gradients(self, grads: List[Any]) -> List[Optional[Any]]:
        """Adds `grads` to the accumulators and counts the step. On the N-th step: the accumulated gradients
        allreduced (and the accumulators zeroed, the counter reset); on the others: the accumulated gradients."""
        import tensorflow as tf

        summed: List[Optional[Any]] = []
        for index, grad in enumerate(grads):
            if grad is None:
                summed.append(None)
                continue
            if isinstance(grad, tf.IndexedSlices):
                if not self.sparse_as_dense:
                    raise ValueError("IndexedSlices gradients need sparse_as_dense=True with "
                                     "backward_passes_per_step > 1 (they are accumulated densely)")
                grad = tf.convert_to_tensor(grad)
            summed.append(self._add(index, grad))
        self.counter.assign_add(1)
        present = [g for g in summed if g is not None]

        def reduce_and_clear() -> List[Any]:
            reduced = self._reduce(list(summed))
            if self.average_aggregated_gradients:
                reduced = [g / self.backward_passes_per_step if g is not None else None for g in reduced]
            reduced = [tf.identity(g) if g is not None else None for g in reduced]
            with tf.control_dependencies([g for g in reduced if g is not None]):
                self._clear()
            return [g for g in reduced if g is not None]

        if not present:
            return summed
        out = iter(tf.cond(tf.equal(self.counter, self.backward_passes_per_step), reduce_and_clear,
                           lambda: [tf.identity(g) for g in present]))
        return [next(out) if g is not None else None for g in summed]

    def _add(self, index: int, grad: Any) -> Any:
        accumulator = self._accumulator(index, grad)
        accumulator.assign_add(grad)
        return accumulator.read_value()

    def _clear(self) -> None:
        import tensorflow as tf

        self.counter.assign(0)
        for accumulator in self._sums.values():
            accumulator.assign(tf.zeros_like(accumulator))

    def apply(self, apply: Callable[[], Any], iterations: Any) -> Any:
        """apply() on the steps that allreduced (the counter is back at 0); on the others only the optimizer's
        step count moves, as apply() would have moved it."""
        import tensorflow as tf

        def applied() -> Any:
            apply()
            return tf.constant(True)

        def skipped() -> Any:
            if iterations is not None:
                iterations.assign_add(1)
            return tf.constant(False)

        return tf.cond(tf.equal(self.counter, 0), applied, skipped)
