"""hvd.elastic.TorchState: a model, an optimizer, ElasticSamplers and plain values committed, restored and synced
together (Horovod's layout: one handler per kind of value)."""

import copy
from typing import Any, Dict

import torch

from perseus.horovod_kit.elastic import ObjectState
from perseus.torch.horovod import basics, functions
from perseus.torch.horovod.elastic.sampler import ElasticSampler


class _Handler:
    def __init__(self, value: Any) -> None:
        self.value = value
        self.saved = None
        self.save()

    def save(self) -> None:
        self.saved = copy.deepcopy(self.value.state_dict())

    def restore(self) -> None:
        self.value.load_state_dict(self.saved)


class _ModelHandler(_Handler):
    def sync(self) -> None:
        functions.broadcast_parameters(self.value.state_dict(), root_rank=0)


class _OptimizerHandler(_Handler):
    def reset(self) -> None:
        rebind = getattr(self.value, "_perseus_rebind", None)  # hvd.DistributedOptimizer: onto the new engine
        if rebind is not None:
            rebind()

    def sync(self) -> None:
        functions.broadcast_optimizer_state(self.value, root_rank=0)


class _SamplerHandler(_Handler):
    def sync(self) -> None:
        # every rank processed its own part of the epoch: the union is what the whole job has processed
        processed = set()
        for part in functions.allgather_object(set(self.value.processed_indices)):
            processed |= part
        state = self.value.state_dict()
        state["processed_indices"] = processed
        self.value.load_state_dict(functions.broadcast_object(state, root_rank=0))


def _handler_for(value: Any) -> Any:
    if isinstance(value, torch.nn.Module):
        return _ModelHandler(value)
    if isinstance(value, torch.optim.Optimizer):
        return _OptimizerHandler(value)
    if isinstance(value, ElasticSampler):
        return _SamplerHandler(value)
    return None


class TorchState(ObjectState):
    """State of a PyTorch training: `model`, `optimizer`, and keyword values (ElasticSamplers, other modules and
    optimizers get their own handler; anything else is a picklable object). Read them as attributes."""

    def __init__(self, model: Any = None, optimizer: Any = None, **kwargs: Any) -> None:
        values = dict(kwargs)
        if model is not None:
            values["model"] = model
        if optimizer is not None:
            values["optimizer"] = optimizer
        self._handlers: Dict[str, Any] = {}
        plain: Dict[str, Any] = {}
        for name, value in values.items():
            handler = _handler_for(value)
            if handler is None:
                plain[name] = value
            else:
                self._handlers[name] = handler
        super().__init__(bcast_object=functions.broadcast_object, get_rank=basics.rank, **plain)

    def __getattr__(self, name: str) -> Any:
        handlers = self.__dict__.get("_handlers", {})
        if name in handlers:
            return handlers[name].value
        raise AttributeError("{!r} object has no attribute {!r}".format(type(self).__name__, name))

    def __setattr__(self, name: str, value: Any) -> None:
        handlers = self.__dict__.get("_handlers")
        if handlers is not None and name in handlers:
            handlers[name].value = value
        else:
            super().__setattr__(name, value)

    def save(self) -> None:
        for handler in self._handlers.values():
            handler.save()
        super().save()

    def restore(self) -> None:
        for handler in self._handlers.values():
            handler.restore()
        super().restore()

    def sync(self) -> None:
        for handler in self._handlers.values():
            handler.sync()
        super().sync()

    def reset(self) -> None:
        for handler in self._handlers.values():
            if hasattr(handler, "reset"):
                handler.reset()
