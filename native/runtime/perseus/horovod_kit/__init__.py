"""The framework-neutral part of perseus's Horovod API (Horovod 0.28's `horovod.common`), written once for every
binding: reduce ops and their pre/postscale rules (ops), collective naming (naming), Horovod's exception types
(errors), capability queries (capabilities), the process-set registry, rule and life cycle (process_sets), the
basics of a one-engine binding (basics), the build-manifest check (manifest) and the self-test skeleton (selftest).
A framework binding (perseus.torch.horovod, perseus.mxnet, ...) only converts tensors and calls the engine; what
does not depend on the framework's tensors lives here (Python >= 3.6, standard library only).
"""

from perseus.horovod_kit.errors import (  # noqa: F401
    HorovodCollectiveError,
    HorovodInternalError,
    HorovodNotInitialized,
    HorovodVersionMismatchError,
    HostsUpdatedInterrupt,
    NotSupportedByPerseus,
)
from perseus.horovod_kit.ops import (  # noqa: F401
    OP_NAMES,
    Adasum,
    Average,
    Max,
    Min,
    Product,
    Sum,
    resolve_op,
)
