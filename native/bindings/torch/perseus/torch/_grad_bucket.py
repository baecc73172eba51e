"""DDP's GradBucket across torch versions, as the perseus hook needs it.

    torch 1.8   get_index(), get_tensors() (one flat tensor per replica), get_offsets/lengths/sizes_list()
    torch 1.9   get_index(), get_tensor(), get_per_parameter_tensors(), is_the_last_bucket_to_allreduce()
    torch 1.10+ index(), buffer(), gradients(), parameters(), is_last()

Before 1.10 a hook's future holds a list with one tensor per replica, and a bucket does not name its
parameters: they are found by their gradients, which are views into the bucket (gradient_as_bucket_view).
"""

from dataclasses import dataclass
from typing import Any, List, Optional

import torch


@dataclass(frozen=True)
class Bucket:
    index: int
    buffer: torch.Tensor  # the flat bucket
    gradients: List[torch.Tensor]  # one view into `buffer` per parameter, in the bucket's order
    parameters: Optional[List[torch.Tensor]]  # None where torch does not say (< 1.10)
    is_last: bool  # False where torch does not say (1.8)
    result_is_list: bool  # the hook's future must hold [buffer] (< 1.10)

    def result(self) -> Any:
        return [self.buffer] if self.result_is_list else self.buffer


def read(bucket: Any) -> Bucket:
    if hasattr(bucket, "buffer"):
        return Bucket(bucket.index(), bucket.buffer(), list(bucket.gradients()), list(bucket.parameters()),
                      bool(bucket.is_last()), False)
    if hasattr(bucket, "get_per_parameter_tensors"):
        return Bucket(bucket.get_index(), bucket.get_tensor(), list(bucket.get_per_parameter_tensors()), None,
                      bool(bucket.is_the_last_bucket_to_allreduce()), True)
    buffer = bucket.get_tensors()[0]
    offsets, lengths = _first_replica(bucket.get_offsets(), 1), _first_replica(bucket.get_lengths(), 1)
    sizes = _first_replica(bucket.get_sizes_list(), 2)
    views = [buffer.narrow(0, int(offset), int(length)).view(list(size))
             for offset, length, size in zip(offsets, lengths, sizes)]
    return Bucket(bucket.get_index(), buffer, views, None, False, True)


def _depth(value: Any) -> int:
    depth = 0
    while isinstance(value, (list, tuple)) and value:
        value, depth = value[0], depth + 1
    return depth


def _first_replica(values: Any, depth: int) -> List[Any]:
    """torch 1.8 nests these per replica in some builds; perseus serves one replica."""
    values = list(values)
    return list(values[0]) if _depth(values) > depth else values


def find_parameters(gradients: List[torch.Tensor], params: List[torch.Tensor]) -> Optional[List[int]]:
    """Indices into `params` of the bucket's gradients (torch < 1.10), matched by memory: with
    gradient_as_bucket_view each parameter's .grad is its view into the bucket. None if one does not match."""
    at = {}
    for i, p in enumerate(params):
        if p.grad is not None:
            at[(p.grad.data_ptr(), tuple(p.grad.shape))] = i
    found = []
    for gradient in gradients:
        i = at.get((gradient.data_ptr(), tuple(gradient.shape)))
        if i is None:
            return None
        found.append(i)
    return found
