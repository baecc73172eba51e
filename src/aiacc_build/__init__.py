"""aiacc-build: the matrix, generator and build orchestrator of AIACC-Training (Perseus).

The runtime's own commands are `perseus` and `perseusrun`; this build tool is `aiacc-build`.
"""

__version__ = "0.1.0"
