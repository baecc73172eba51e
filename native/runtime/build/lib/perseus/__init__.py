"""AIACC-Training (Perseus): data-parallel training acceleration.

`import perseus` before `import torch` makes DistributedDataParallel use the perseus communication
hook; `perseus.torch.horovod` is the Horovod-compatible API.
"""

__version__ = "1.5.0"
