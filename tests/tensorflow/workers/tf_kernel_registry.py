"""Prints, as one JSON line, the kernels TensorFlow's registry holds for every op of the installed perseus_tensorflow
(the op list read from the library itself) and the wheel's build manifest. Needs no GPU: registering a kernel is
not running it."""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from tensorflow.core.framework import op_def_pb2  # noqa: E402
from tensorflow.python.client import pywrap_tf_session  # noqa: E402
from tensorflow.python.framework import kernels  # noqa: E402

from perseus.tensorflow import _native  # noqa: E402


def library_ops(path):
    handle = pywrap_tf_session.TF_LoadLibrary(path)
    try:
        op_list = op_def_pb2.OpList()
        op_list.ParseFromString(pywrap_tf_session.TF_GetOpList(handle))
    finally:
        pywrap_tf_session.TF_DeleteLibraryHandle(handle)
    return sorted(op.name for op in op_list.op)


def main():
    _native.load()  # the manifest check, then tf.load_op_library
    registry = {}
    for name in library_ops(_native.library_path(_native.package_dir())):
        registry[name] = [{"device": k.device_type, "host_memory": sorted(k.host_memory_arg)}
                          for k in kernels.get_registered_kernels_for_op(name).kernel]
    print(json.dumps({"kernels": registry, "manifest": _native.build_manifest()}, sort_keys=True))


if __name__ == "__main__":
    main()
