"""PerseusSyncBatchNorm (issue 15, item 4): not built yet. `import perseus.mxnet` installs this name as
`mx.gluon.contrib.nn.PerseusSyncBatchNorm` so that a model written for the seed fails at construction with
what is missing, rather than with an AttributeError that hides it."""
from typing import Any

import mxnet as mx

NOT_SUPPORTED = ("not supported yet: PerseusSyncBatchNorm (comm_scope=0 node-local / 1 global statistics) is not "
                 "part of this perseus_mxnet; use mx.gluon.nn.BatchNorm (per-rank statistics) meanwhile")


def PerseusSyncBatchNorm(*args, **kwargs):
    # type: (Any, Any) -> Any
    raise NotImplementedError(NOT_SUPPORTED)


def install():
    # type: () -> None
    if not hasattr(mx.gluon.contrib.nn, "PerseusSyncBatchNorm"):
        mx.gluon.contrib.nn.PerseusSyncBatchNorm = PerseusSyncBatchNorm
