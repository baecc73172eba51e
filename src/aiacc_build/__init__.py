"""aiacc-build: the matrix, generator and build orchestrator of AIACC-Training (Perseus).

The runtime's own commands are `perseus` and `perseusrun`; this build tool is `aiacc-build`.
"""

__version__ = "0.1.0"

# The framework adapters register the frameworks the model knows (aiacc_build.model stays a leaf): loaded with the
# package, before any module makes a Framework.
from . import adapters  # noqa: E402,F401
