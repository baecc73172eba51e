"""Horovod's reduce ops (plain ints, as in Horovod), the op/average argument rule, and the pre/postscale rule.

Scaling, as Horovod does it: integer tensors are scaled in float64 and truncated back to their dtype (per rank
for the prescale, before the sum; after the sum for the postscale), float16 on the CPU in float32, every other
float in its own dtype. Average is Sum with a postscale of 1/size.
"""

import warnings
from typing import Optional

Average = 0
Sum = 1
Adasum = 2
Min = 3
Max = 4
Product = 5

OP_NAMES = {Average: "Average", Sum: "Sum", Adasum: "Adasum", Min: "Min", Max: "Max", Product: "Product"}

# How a tensor of a kind is scaled: the dtype kind the multiplication runs in.
SCALE_IN_FLOAT64 = "float64"
SCALE_IN_FLOAT32 = "float32"
SCALE_IN_OWN_DTYPE = "own"


def resolve_op(op: Optional[int], average: Optional[bool], default: int = Average) -> int:
    """The reduce op of a call (Horovod's handle_average_backwards_compatibility): op= and the deprecated
    average= are exclusive; neither gives `default`."""
    if op is not None and average is not None:
        raise ValueError("The op parameter supersedes average. Please provide only one of them.")
    if average is not None:
        warnings.warn("Parameter `average` has been replaced with `op` and will be removed in v1.0",
                      DeprecationWarning)
        return Average if average else Sum
    if op is None:
        return default
    if op not in OP_NAMES:
        raise ValueError("op={!r} is not a Horovod reduction: use hvd.Average, hvd.Sum, hvd.Adasum, hvd.Min, "
                         "hvd.Max or hvd.Product".format(op))
    return op


def scale_kind(is_integer: bool, is_float16: bool, on_host: bool) -> str:
    """Where a tensor's pre/postscale multiplication runs (see the module's docstring)."""
    if is_integer:
        return SCALE_IN_FLOAT64
    if is_float16 and on_host:
        return SCALE_IN_FLOAT32
    return SCALE_IN_OWN_DTYPE


def postscale_for(op: int, size: int, postscale_factor: float) -> float:
    """The postscale a Sum-based op applies after the reduction (Average divides by the ranks)."""
    return postscale_factor / size if op == Average else postscale_factor


def check_scalable(op: int, prescale_factor: float, postscale_factor: float, api: str) -> None:
    if op in (Min, Max, Product) and (prescale_factor != 1.0 or postscale_factor != 1.0):
        raise ValueError("{}: prescale_factor/postscale_factor apply to Sum, Average and Adasum, not {}".format(
            api, OP_NAMES[op]))


def split_sizes(first_dim: int, size: int) -> list:
    """Horovod's reducescatter split of a first dimension over `size` ranks: the first (first_dim % size) ranks
    get one row more."""
    base, extra = divmod(first_dim, size)
    return [base + (1 if r < extra else 0) for r in range(size)]
