"""perseus.tensorflow: the TensorFlow binding of AIACC-Training (shipped in the per-cell
perseus_tensorflow wheel, one per TensorFlow build, any Python 3).

- `import perseus.tensorflow.horovod as hvd` is the Horovod-compatible API;
- perseus.tensorflow._native loads the op library (fp16 compression over the core, the engine's
  collectives as asynchronous TensorFlow ops) after checking its build manifest.
"""

import pkgutil

# A development checkout keeps these sources apart from the built library; an installed wheel has
# both in one directory and this changes nothing.
__path__ = pkgutil.extend_path(__path__, __name__)
