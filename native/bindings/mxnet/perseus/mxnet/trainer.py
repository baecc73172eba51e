"""Horovod's Gluon integration on the perseus engine: DistributedTrainer and broadcast_parameters.

DistributedTrainer is a gluon.Trainer without a KVStore whose gradient reduction submits each dense
gradient to the engine as soon as MXNet has computed it (last layer first, overlapping the backward pass): gradients are summed over the ranks and
the optimizer's rescale_grad divides by the number of ranks, so a step averages, as Horovod does.
"""
from typing import Any, Dict, Optional

import mxnet as mx

from . import _world, collectives

_trainers = 0


def broadcast_parameters(params, root_rank=0, prefix=None):
    # type: (Any, int, Optional[str]) -> None
    """Sets every rank's parameters to root_rank's: a dict of NDArrays (Module.get_params()) or a Gluon
    ParameterDict (net.collect_params()), in sorted-name order on every rank."""
    prefix = prefix or "parameters"
    items = sorted(params.items(), key=lambda kv: kv[0]) if hasattr(params, "items") else list(enumerate(params))
    for name, value in items:
        if isinstance(value, mx.nd.NDArray):
            collectives.broadcast_(value, root_rank, name="%s.%s" % (prefix, name))
            continue
        if isinstance(value, mx.gluon.Parameter):
            try:
                arrays = value.list_data()
            except mx.gluon.parameter.DeferredInitializationError:
                raise RuntimeError(
                    "not supported yet: broadcast_parameters of parameter %s whose initialisation is deferred; "
                    "give its layer the input size (e.g. in_units=) or run one forward pass first" % value.name)
            for device, array in enumerate(arrays):
                collectives.broadcast_(array, root_rank, name="%s.%s.%d" % (prefix, name, device))
            continue
        raise TypeError("broadcast_parameters: %s is a %s, expected an NDArray or a gluon.Parameter"
                        % (name, type(value).__name__))


class DistributedTrainer(mx.gluon.Trainer):
    """A gluon.Trainer whose step averages the gradients over all ranks (Horovod's signature).
    compression: not supported yet (fp16 on the wire is the engine's wire policy, PERSEUS_ALLREDUCE_DTYPE)."""

    def __init__(self, params, optimizer, optimizer_params=None, compression=None, gradient_predivide_factor=1.0,
                 prefix=None):
        # type: (Any, Any, Optional[Dict[str, Any]], Any, float, Optional[str]) -> None
        global _trainers
        if compression is not None:
            raise ValueError("not supported yet: DistributedTrainer(compression=...); the engine compresses to fp16 "
                             "on the wire by default (PERSEUS_ALLREDUCE_DTYPE=0), PERSEUS_ALLREDUCE_DTYPE=1 for fp32")
        if gradient_predivide_factor != 1.0:
            raise ValueError("not supported yet: gradient_predivide_factor=%r (only 1.0)" % gradient_predivide_factor)
        super(DistributedTrainer, self).__init__(params, optimizer, optimizer_params=optimizer_params, kvstore=None)
        if len(self._contexts) != 1:
            raise ValueError("not supported yet: DistributedTrainer over %d contexts in one process; run one "
                             "process per device (perseusrun -np N)" % len(self._contexts))
        # summed over the ranks, divided here: the step averages
        self._scale /= _world.size()
        self._perseus_name = prefix or "trainer%d" % _trainers
        _trainers += 1

    def _allreduce_grads(self):
        grads, names = [], []
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            for device, grad in enumerate(param.list_grad()):
                if grad.stype != "default":
                    raise TypeError("not supported yet: sparse gradient of %s in DistributedTrainer" % param.name)
                grads.append(grad)
                names.append("%s.grad.%d.%d" % (self._perseus_name, i, device))
        if grads:
            # last parameters first: loss.backward() returned before MXNet's engine computed the gradients,
            # and it computes the last layers' first, so those are sent while the others are computed
            collectives.grouped_allreduce_(grads[::-1], average=False, names=names[::-1])


class DistributedOptimizer(mx.optimizer.Optimizer):
    """Horovod's Module-API wrapper: every update first sums the gradient over the ranks (fused when the
    updater hands several at once), and rescale_grad is divided by the number of ranks, so the update
    averages. Use it with Module.fit(kvstore=None, optimizer=DistributedOptimizer(opt)); attributes it
    does not define are the wrapped optimizer's."""

    def __init__(self, optimizer, gradient_predivide_factor=1.0):
        # type: (Any, float) -> None
        # no Optimizer.__init__: the state (learning rate, multipliers, indices) is the wrapped one's
        if not isinstance(optimizer, mx.optimizer.Optimizer):
            raise TypeError("DistributedOptimizer wraps an mx.optimizer.Optimizer, not %s" % type(optimizer).__name__)
        if gradient_predivide_factor != 1.0:
            raise ValueError("not supported yet: gradient_predivide_factor=%r (only 1.0)" % gradient_predivide_factor)
        self.__dict__["_optimizer"] = optimizer
        optimizer.rescale_grad /= _world.size()

    def __getattr__(self, item):
        # type: (str) -> Any
        return getattr(self.__dict__["_optimizer"], item)

    def __setattr__(self, key, value):
        # type: (str, Any) -> None
        setattr(self.__dict__["_optimizer"], key, value)

    def create_state(self, index, weight):
        # type: (Any, Any) -> Any
        return self._optimizer.create_state(index, weight)

    def create_state_multi_precision(self, index, weight):
        # type: (Any, Any) -> Any
        return self._optimizer.create_state_multi_precision(index, weight)

    def _allreduce(self, index, grad):
        # type: (Any, Any) -> None
        if isinstance(index, (tuple, list)):
            collectives.grouped_allreduce_(list(grad), False, ["optimizer.grad.%s" % i for i in index])
        else:
            collectives.grouped_allreduce_([grad], False, ["optimizer.grad.%s" % index])

    def update(self, index, weight, grad, state):
        # type: (Any, Any, Any, Any) -> None
        self._allreduce(index, grad)
        self._optimizer.update(index, weight, grad, state)

    def update_multi_precision(self, index, weight, grad, state):
        # type: (Any, Any, Any, Any) -> None
        self._allreduce(index, grad)
        self._optimizer.update_multi_precision(index, weight, grad, state)

    def set_learning_rate(self, lr):
        # type: (float) -> None
        self._optimizer.set_learning_rate(lr)

    def set_lr_mult(self, args_lr_mult):
        # type: (Any) -> None
        self._optimizer.set_lr_mult(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        # type: (Any) -> None
        self._optimizer.set_wd_mult(args_wd_mult)
