"""perseus.mxnet's device path on CPU MXNet (one process, no job): the pointer helper on real NDArrays, the
device arithmetic against the host path's, the CPU wheel's engine report and its refusal of a GPU context.
Prints one JSON line. Run by tests/mxnet/test_mxnet_device_pointer.py in the MXNet environment."""
import ctypes
import json
import types

import mxnet as mx
import numpy as np

import perseus.mxnet as hvd
from perseus.horovod_kit import host_collectives as host
from perseus.mxnet import _device

out = {}

# the pointer: taken after MXNDArrayWaitToWrite, so the queued writes have landed (a dot of 1500x1500 ones
# takes long enough that an unordered read would see MXNet's allocation, not the result)
big = mx.nd.ones((1500, 1500))
product = mx.nd.dot(big, big) + 1
address = _device.data_pointer(product)
seen = np.frombuffer(ctypes.string_at(address, product.size * 4), dtype=np.float32)
out["queued_write_landed"] = bool((seen == 1501.0).all())

unordered = 0  # the control: the same pointer without the wait, read at once, misses the result
for _ in range(3):
    late = mx.nd.dot(big, big) + 1
    pointer = ctypes.c_void_p()
    mx.base.check_call(mx.base._LIB.MXNDArrayGetData(late.handle, ctypes.byref(pointer)))
    unordered += not (np.frombuffer(ctypes.string_at(pointer.value, late.size * 4), dtype=np.float32) == 1501.0).all()
    late.wait_to_read()
out["unordered_misses"] = unordered

a = mx.nd.arange(12).reshape((3, 4))
out["bytes_equal"] = ctypes.string_at(_device.data_pointer(a), 48) == a.asnumpy().tobytes()
out["slice_offset"] = _device.data_pointer(a[1:3]) - _device.data_pointer(a)

# a write through the pointer (what the engine's in-place result is) is what MXNet reads next
d = mx.nd.zeros((4,), dtype="int32")
values = np.array([7, -1, 3, 9], dtype=np.int32)
ctypes.memmove(_device.data_pointer(d), values.ctypes.data, values.nbytes)
out["write_seen"] = (d + 0).asnumpy().tolist()

# the kit's arithmetic on NDArrays (MXNet operators, as the device path runs it) against numpy's, per dtype
mismatches = []
for dtype in ("float32", "float16", "float64", "int32", "int64", "uint8", "int8"):
    base = (np.arange(-6, 6) * 1.7).astype(dtype)
    nd = mx.nd.array(base, dtype=dtype)
    for factor in (0.5, 3.0, 1.0 / 3):
        if host.scale(nd, factor).asnumpy().tobytes() != host.scale(base, factor).tobytes():
            mismatches.append("scale %s %s" % (dtype, factor))
    for count in (2, 3):
        if host.divide(nd, count).asnumpy().tobytes() != host.divide(base, count).tobytes():
            mismatches.append("divide %s %d" % (dtype, count))
out["arithmetic_mismatches"] = mismatches

# paths: host NDArrays; the CPU wheel's engine report; a GPU context (a real mx.gpu(0) Context: CPU MXNet
# cannot allocate on it, so the NDArray is a stand-in holding it) refused by the public API, before any job
out["cpu_path"] = _device.path_of(mx.nd.zeros((2,)))
out["report_read_for_cpu"] = _device._device_buffers is not None
out["device_buffers"] = _device._engine_has_device_buffers()
gpu = types.SimpleNamespace(context=mx.gpu(0))
refusals = {}
for call in ("allreduce", "allreduce_", "broadcast", "broadcast_"):
    try:
        getattr(hvd, call)(gpu, **({"root_rank": 0} if "broadcast" in call else {}))
        refusals[call] = None
    except _device.DevicePathError as error:
        refusals[call] = str(error)
out["refusals"] = refusals
out["manifest"] = _device.wheel_words(hvd._native.read_manifest())
print(json.dumps(out))
