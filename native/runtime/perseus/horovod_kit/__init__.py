"""The framework-neutral part of perseus's Horovod API (Horovod 0.28's `horovod.common`), written once for every
binding: reduce ops and their pre/postscale rules, collective naming, Horovod's exception types, capability
queries, the process-set rule. A framework binding (perseus.torch.horovod, ...) only converts tensors and calls
the engine; what does not depend on the framework's tensors lives here (Python >= 3.6, standard library only).
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
