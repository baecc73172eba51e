"""perseus.torch: the PyTorch binding of AIACC-Training (shipped in the per-cell perseus_torch wheel).

- `import perseus` makes torch's DistributedDataParallel use the perseus communication hook
  (perseus.torch.ddp);
- `import perseus.torch.horovod as hvd` is the Horovod-compatible API;
- perseus.torch._native loads the compiled core (fp16/bf16 compression, fusion planning, gossip
  downsampling).
"""

import pkgutil

# A development checkout keeps these sources apart from the built extension; an installed wheel
# has both in one directory and this changes nothing.
__path__ = pkgutil.extend_path(__path__, __name__)
