"""AIACC-Training (Perseus): data-parallel training acceleration.

`import perseus` (before or after `import torch`) makes every torch DistributedDataParallel use the
perseus communication hook, without other code changes; `perseus.torch.horovod` is the
Horovod-compatible API. Every PERSEUS_* variable is read and validated by `perseus.config`.
"""

import pkgutil

# perseus-common and the per-cell framework wheels (perseus_torch, ...) install into one `perseus`
# package; in a development checkout they live in different directories, which this joins.
__path__ = pkgutil.extend_path(__path__, __name__)

try:  # written at build time: the release this perseus-common was built for (setup.py)
    from ._version import __version__
except ImportError:  # a source checkout on sys.path, never built
    try:
        from importlib import metadata as _metadata

        __version__ = _metadata.version("perseus-common")
    except Exception:  # Python 3.6/3.7, or nothing installed
        __version__ = "unknown"


def _install_runtime_hooks() -> None:
    """Each framework whose adapter names a runtime hook gets it installed (torch: DDP uses the perseus
    communication hook); a hook imports nothing of its framework until the framework is used."""
    import importlib

    from perseus._frameworks import FRAMEWORKS  # generated from the build tool's framework adapters

    for row in FRAMEWORKS:
        if row["runtime_hook"]:
            importlib.import_module(row["runtime_hook"]).install()


def _warn_unknown_variables() -> None:
    """A misspelt PERSEUS_* name changes nothing: say so at import, with the closest known name."""
    from perseus import variable_names

    variable_names.warn_unknown()


def _read_horovod_variables() -> None:
    """A Horovod job's HOROVOD_* settings become their PERSEUS_* counterparts (before anything reads those);
    the ones perseus does not honour are named in a warning (perseus/horovod_variables.py)."""
    from perseus import horovod_variables

    horovod_variables.translate_process_environment()


_read_horovod_variables()
_warn_unknown_variables()
_install_runtime_hooks()
