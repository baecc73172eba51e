"""Test-only alias package: `import horovod.torch` resolves to perseus.torch.horovod, `horovod.mxnet` to
perseus.mxnet, `horovod.tensorflow` (and its keras) to perseus.tensorflow.horovod, `horovod.keras` to
perseus.tensorflow.keras (see README.md)."""

import importlib
import sys


class _Alias:
    """Finds `horovod.<name>` as the perseus module it stands for, imported on first use."""

    TARGETS = {"horovod.torch": "perseus.torch.horovod", "horovod.mxnet": "perseus.mxnet",
               "horovod.tensorflow": "perseus.tensorflow.horovod",
               "horovod.tensorflow.keras": "perseus.tensorflow.horovod.keras",
               "horovod.keras": "perseus.tensorflow.keras"}

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in self.TARGETS:
            return None
        import importlib.util
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        module = importlib.import_module(self.TARGETS[spec.name])
        sys.modules[spec.name] = module
        return module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Alias())
