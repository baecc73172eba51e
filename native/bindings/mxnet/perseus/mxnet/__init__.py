"""perseus.mxnet: the MXNet binding of AIACC-Training (shipped in the per-cell perseus_mxnet wheel).

perseus.mxnet._native loads the compiled library (the engine and the core's compression) after checking
its build manifest against the running mxnet.
"""

import pkgutil

# A development checkout keeps these sources apart from the built library; an installed wheel has both
# in one directory and this changes nothing.
__path__ = pkgutil.extend_path(__path__, __name__)

from . import _native  # noqa: E402

_native.load()
