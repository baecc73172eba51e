"""Horovod's Gluon integration on the perseus engine: DistributedTrainer and broadcast_parameters.

DistributedTrainer is a gluon.Trainer without a KVStore whose gradient reduction submits each dense
gradient to the engine as soon as MXNet has computed it (last layer first, overlapping the backward pass):
gradients are summed over the ranks and the optimizer's rescale_grad divides by the number of ranks, so a step
averages, as Horovod does. gradient_predivide_factor f divides before the sum and multiplies by f after it
(the step's rescale by f / size), as Horovod's; compression= is applied around the engine's own wire policy.
"""
import types
from typing import Any, Dict, List, Optional

import mxnet as mx

from perseus.horovod_kit.ops import split_sizes

from . import collectives
from .compression import Compression
from .process_sets import Group, global_process_set

_trainers = 0


def _broadcast_when_initialised(param, root_rank, name):
    # type: (Any, int, str) -> None
    """A Gluon parameter whose shape is known only at the first forward: broadcast it right after MXNet
    initialises it (every rank initialises its layers in the same order, in that forward)."""
    initialise = param._init_impl

    def initialise_then_broadcast(self, *args, **kwargs):
        initialise(*args, **kwargs)
        for device, array in enumerate(self.list_data()):
            collectives.broadcast_(array, root_rank, name="%s.%d" % (name, device))

    param._init_impl = types.MethodType(initialise_then_broadcast, param)


def broadcast_parameters(params, root_rank=0, prefix=None):
    # type: (Any, int, Optional[str]) -> None
    """Sets every rank's parameters to root_rank's: a dict of NDArrays (Module.get_params()) or a Gluon
    ParameterDict (net.collect_params()), in sorted-name order on every rank. A parameter whose initialisation
    is deferred is broadcast when MXNet initialises it."""
    prefix = prefix or "parameters"
    items = sorted(params.items(), key=lambda kv: str(kv[0])) if hasattr(params, "items") else list(enumerate(params))
    for name, value in items:
        if isinstance(value, mx.nd.NDArray):
            collectives.broadcast_(value, root_rank, name="%s.%s" % (prefix, name))
            continue
        if isinstance(value, mx.gluon.Parameter):
            try:
                arrays = value.list_data()
            except mx.gluon.parameter.DeferredInitializationError:
                _broadcast_when_initialised(value, root_rank, "%s.%s" % (prefix, name))
                continue
            for device, array in enumerate(arrays):
                collectives.broadcast_(array, root_rank, name="%s.%s.%d" % (prefix, name, device))
            continue
        raise TypeError("broadcast_parameters: %s is a %s, expected an NDArray or a gluon.Parameter"
                        % (name, type(value).__name__))


def _split(items, groups):
    # type: (List[Any], int) -> List[List[Any]]
    """`items` in `groups` consecutive runs of near-equal length (Horovod's num_groups)."""
    if groups <= 0 or len(items) <= 1:
        return [items]
    out, start = [], 0
    for count in split_sizes(len(items), min(groups, len(items))):  # the kit's split: the first ones one more
        out.append(items[start:start + count])
        start += count
    return out


def _reduce_gradients(grads, names, compression, predivide, num_groups, group):
    # type: (List[Any], List[str], Any, float, int, Group) -> None
    """Sums `grads` over the ranks in place: divided by `predivide` first, multiplied back after; compressed
    with `compression` around the engine's wire policy; in `num_groups` groups when given."""
    if predivide != 1.0:
        for g in grads:
            g[:] = g / predivide
    wires, contexts = [], []
    for g in grads:
        wire, context = compression.compress(g)
        wires.append(wire)
        contexts.append(context)
    for part in _split(list(range(len(grads))), num_groups):
        collectives._gradient_allreduce_([wires[i] for i in part], False, [names[i] for i in part], group)
    for g, wire, context in zip(grads, wires, contexts):
        if wire is not g and g.context.device_type == "gpu":
            compression.decompress(wire, context).copyto(g)  # device to device (a GPU NDArray: _device.py)
        elif wire is not g:
            collectives.assign(g, compression.decompress(wire, context).asnumpy())
        if predivide != 1.0:
            g[:] = g * predivide


class DistributedTrainer(mx.gluon.Trainer):
    """A gluon.Trainer whose step averages the gradients over all ranks (Horovod's signature)."""

    def __init__(self, params, optimizer, optimizer_params=None, compression=Compression.none,
                 gradient_predivide_factor=1.0, prefix=None, num_groups=0, process_set=global_process_set):
        # type: (Any, Any, Optional[Dict[str, Any]], Any, float, Optional[str], int, Any) -> None
        global _trainers
        process_set = process_set if process_set is not None else global_process_set
        super(DistributedTrainer, self).__init__(params, optimizer, optimizer_params=optimizer_params, kvstore=None)
        if len(self._contexts) != 1:
            raise ValueError("not supported yet: DistributedTrainer over %d contexts in one process; run one "
                             "process per device (perseusrun -np N)" % len(self._contexts))
        # summed over the set's ranks, divided here: the step averages
        self._scale /= process_set.size()
        self._perseus_set = process_set  # a rank outside it may build the trainer; its steps stay local
        self._perseus_name = prefix or "trainer%d" % _trainers
        self._perseus_compression = compression if compression is not None else Compression.none
        self._perseus_predivide = float(gradient_predivide_factor)
        self._perseus_groups = int(num_groups)
        _trainers += 1

    def _allreduce_grads(self):
        if self._perseus_set.size() == 1 or not self._perseus_set.included():
            return  # nothing to reduce over, or not this rank's set (as Horovod's)
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
            _reduce_gradients(grads[::-1], names[::-1], self._perseus_compression, self._perseus_predivide,
                              self._perseus_groups, Group(self._perseus_set, "DistributedTrainer"))


class DistributedOptimizer(mx.optimizer.Optimizer):
    """Horovod's Module-API wrapper: every update first sums the gradient over the ranks (fused when the
    updater hands several at once), and rescale_grad is divided by the number of ranks, so the update
    averages. Use it with Module.fit(kvstore=None, optimizer=DistributedOptimizer(opt)); attributes it
    does not define are the wrapped optimizer's."""

    def __init__(self, optimizer, gradient_predivide_factor=1.0, num_groups=0, process_set=global_process_set):
        # type: (Any, float, int, Any) -> None
        # no Optimizer.__init__: the state (learning rate, multipliers, indices) is the wrapped one's
        if not isinstance(optimizer, mx.optimizer.Optimizer):
            raise TypeError("DistributedOptimizer wraps an mx.optimizer.Optimizer, not %s" % type(optimizer).__name__)
        process_set = process_set if process_set is not None else global_process_set
        self.__dict__["_optimizer"] = optimizer
        self.__dict__["_perseus_predivide"] = float(gradient_predivide_factor)
        self.__dict__["_perseus_groups"] = int(num_groups)
        self.__dict__["_perseus_set"] = process_set  # a rank outside it may build the optimizer, not update
        optimizer.rescale_grad /= process_set.size()

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
        process_set = self.__dict__["_perseus_set"]
        if process_set.size() == 1 or not process_set.included():
            return  # nothing to reduce over, or not this rank's set: a local update (as Horovod's)
        grads = list(grad) if isinstance(index, (tuple, list)) else [grad]
        indices = list(index) if isinstance(index, (tuple, list)) else [index]
        _reduce_gradients(grads, ["optimizer.grad.%s" % i for i in indices], Compression.none,
                          self.__dict__["_perseus_predivide"], self.__dict__["_perseus_groups"],
                          Group(process_set, "DistributedOptimizer"))

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
