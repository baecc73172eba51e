"""AIACC-Training (Perseus): data-parallel training acceleration.

`import perseus` (before or after `import torch`) makes every torch DistributedDataParallel use the
perseus communication hook, without other code changes; `perseus.torch.horovod` is the
Horovod-compatible API. Every PERSEUS_* variable is read and validated by `perseus.config`.
"""

import pkgutil

# perseus-common and the per-cell framework wheels (perseus_torch, ...) install into one `perseus`
# package; in a development checkout they live in different directories, which this joins.
__path__ = pkgutil.extend_path(__path__, __name__)

__version__ = "1.5.0"

from perseus import _torch_hook  # noqa: E402  (needs __path__ above)

_torch_hook.install()
