"""The framework adapters and their one registry, keyed by the matrix's framework name.

`adapter_for(framework)` is how every other module asks about a framework; adding a framework is one
adapter module listed in BUILTIN plus its binding folder (docs/extending.md, "Add a framework").
Tests register a throwaway adapter with `registered(...)`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..model import Framework, UnknownFrameworkError, register_framework, unregister_framework  # noqa: F401
from .base import CUDA_LIBRARIES, MPI_LIBRARIES, FrameworkAdapter, check_adapter
from .mxnet import MxnetAdapter
from .tensorflow import TensorflowAdapter
from .torch import TorchAdapter

BUILTIN: tuple[FrameworkAdapter, ...] = (TorchAdapter(), TensorflowAdapter(), MxnetAdapter())

_REGISTRY: dict[str, FrameworkAdapter] = {}


def register(adapter: FrameworkAdapter) -> None:
    check_adapter(adapter)
    if adapter.name in _REGISTRY:
        raise ValueError(f"a framework adapter named {adapter.name!r} is already registered")
    _REGISTRY[adapter.name] = adapter
    register_framework(adapter.name, adapter.python_specific)


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)
    unregister_framework(name)


@contextlib.contextmanager
def registered(adapter: FrameworkAdapter) -> Iterator[FrameworkAdapter]:
    """Register an adapter for the duration of a `with` block (tests)."""
    register(adapter)
    try:
        yield adapter
    finally:
        unregister(adapter.name)


def names() -> tuple[str, ...]:
    """Every registered framework, in registration order."""
    return tuple(_REGISTRY)


def all_adapters() -> tuple[FrameworkAdapter, ...]:
    return tuple(_REGISTRY.values())


def adapter_for(framework: str) -> FrameworkAdapter:
    """The adapter of a framework (a Framework or its name); unknown: an error naming the known ones."""
    return _REGISTRY[str(Framework(framework))]  # Framework: UnknownFrameworkError naming the known ones


def framework_of_distribution(normalised_name: str) -> FrameworkAdapter | None:
    """The adapter whose framework a (normalised) distribution name installs, if any."""
    return next((a for a in _REGISTRY.values() if a.is_distribution(normalised_name)), None)


def excluded_libraries() -> tuple[str, ...]:
    """Never grafted into any Perseus wheel: CUDA's runtime and NCCL, the job's MPI, and every framework's own
    libraries."""
    out = list(CUDA_LIBRARIES) + list(MPI_LIBRARIES)
    for adapter in _REGISTRY.values():
        out += [lib for lib in adapter.own_libraries if lib not in out]
    return tuple(out)


for _adapter in BUILTIN:
    register(_adapter)


def companion_requirements(project: str) -> tuple[str, ...]:
    """What a build or test env installs next to a framework distribution (`mxnet` -> numpy<1.24)."""
    adapter = framework_of_distribution(project.lower().replace("_", "-"))
    return adapter.companion_requirements if adapter is not None else ()
