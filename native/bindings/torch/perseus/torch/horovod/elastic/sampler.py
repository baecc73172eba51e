"""hvd.elastic.ElasticSampler: a distributed sampler that, after a reset, splits only the samples the job has not
processed yet this epoch among the ranks there are now (Horovod's semantics: record_batch() after each batch,
state kept by TorchState)."""

import math
import random
from typing import Any, Dict, Iterator, List

import torch.utils.data


class ElasticSampler(torch.utils.data.Sampler):
    def __init__(self, dataset: Any, shuffle: bool = True, seed: int = 0) -> None:
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_indices: set = set()
        self.num_replicas = 0
        self.rank = 0
        self.remaining_indices: List[int] = []
        self.num_samples = 0
        self.total_size = 0
        self.indices: List[int] = []
        self.reset()

    def set_epoch(self, epoch: int) -> None:
        """Starts epoch `epoch`: nothing processed yet, a new order when shuffling."""
        self.epoch = epoch
        self.processed_indices = set()
        self.reset()

    def record_batch(self, batch_idx: int, batch_size: int) -> None:
        """Marks this rank's batch `batch_idx` (of `batch_size` samples) of the current iteration processed."""
        self.record_indices(self.get_indices(batch_idx, batch_size))

    def record_indices(self, indices: Any) -> None:
        self.processed_indices.update(indices)

    def get_indices(self, batch_idx: int, batch_size: int) -> List[int]:
        """This rank's sample indices of batch `batch_idx` in the current iteration."""
        start = batch_idx * batch_size
        return self.indices[start:min(start + batch_size, len(self.indices))]

    def state_dict(self) -> Dict[str, Any]:
        return {"epoch": self.epoch, "processed_indices": set(self.processed_indices)}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        self.epoch = state_dict["epoch"]
        self.processed_indices = set(state_dict["processed_indices"])
        self.reset()

    def reset(self) -> None:
        """Re-splits the unprocessed samples of this epoch among the current ranks."""
        from perseus.torch.horovod import basics

        self.num_replicas = basics.size() if basics.is_initialized() else 1
        self.rank = basics.rank() if basics.is_initialized() else 0
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        self.remaining_indices = [i for i in order if i not in self.processed_indices]
        self.num_samples = int(math.ceil(len(self.remaining_indices) / self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas
        self._split()

    def _split(self) -> None:
        indices = list(self.remaining_indices)
        if indices:  # pad by repeating from the start, so every rank gets num_samples
            indices += (indices * math.ceil(self.total_size / len(indices)))[: self.total_size - len(indices)]
        self.indices = indices[self.rank:self.total_size:self.num_replicas]

    def __iter__(self) -> Iterator[int]:
        self._split()
        return iter(self.indices)

    def __len__(self) -> int:
        return self.num_samples
