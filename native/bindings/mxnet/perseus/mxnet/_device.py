"""GPU NDArrays on the engine's device path (docs/device.md): allreduce and broadcast hand the device memory of an
NDArray of context mx.gpu(i) to Engine.allreduce_device_async / broadcast_device_async, which write the result in
place; no host copy of the data is made here (the engine itself may stage through pinned host memory).

Which path an NDArray takes (choose_path): host contexts (cpu, cpu_pinned, cpu_shared) the host path exactly as
before, without even reading the device report; gpu the device path when this wheel's engine has device buffers,
else DevicePathError naming the wheel to install. Importable without mxnet: the fast tier tests choose_path and
the refusal in a Python that has none.

Ordering (data_pointer): MXNet 1.9.1 runs every NDArray operation on its own asynchronous engine and its own CUDA
streams, and marks a GPU operation complete only after synchronising the stream it ran on. MXNDArrayWaitToWrite
returns when every operation pushed before it that writes or reads the array is complete, so the bytes are in
device memory: this is the rule of docs/device.md ("the caller must have finished writing the buffer, its stream
synchronised, before the submit"; the engine's stream does not wait for MXNet's). WaitToWrite rather than
wait_to_read(): the engine also writes the array, so reads still queued (an optimizer's) must be done too. MXNet
does not know of the engine's write: the caller waits for the handle before it returns, and the engine
synchronises its own stream before a handle completes, so MXNet operations pushed afterwards see the result.
Unlike perseus.torch there is no feeder thread: the calling thread waits, as asnumpy() does on the host path.
"""
import ctypes
import threading
from typing import Any, Dict, Optional, Sequence

import numpy as np

HOST, DEVICE = "host", "device"
HOST_CONTEXTS = ("cpu", "cpu_pinned", "cpu_shared")
INSTALLER = "bash install_AIACC-Training.sh"


class DevicePathError(RuntimeError):
    """A GPU NDArray cannot take the engine's device path (the message names what to install)."""


def wheel_words(manifest):
    # type: (Optional[Dict[str, Any]]) -> str
    """'perseus_mxnet 2.0.0+1.9.1 (built for mxnet 1.9.1, CPU only)', from the wheel's build manifest."""
    if not manifest:
        return "this perseus_mxnet"
    cuda = manifest.get("mxnet_cuda")
    distribution = "mxnet-cu%s" % cuda.replace(".", "") if cuda else "mxnet"
    return "perseus_mxnet %s (built for %s %s, %s)" % (manifest.get("version"), distribution,
                                                       manifest.get("mxnet_version"),
                                                       "CUDA " + cuda if cuda else "CPU only")


def refusal(context, manifest):
    # type: (str, Optional[Dict[str, Any]]) -> str
    return ("not supported: a GPU NDArray (%s) on %s, whose engine has no device buffers: install the perseus_mxnet "
            "wheel of your mxnet's CUDA cell (%s picks it), or build the binding against a CUDA build of mxnet "
            "(native/bindings/mxnet turns the engine's device buffers on for it)" % (context, wheel_words(manifest),
                                                                                     INSTALLER))


def choose_path(device_type, device_buffers, manifest, context=""):
    # type: (str, bool, Optional[Dict[str, Any]], str) -> str
    """HOST or DEVICE for an NDArray whose context has `device_type`; device_buffers: this wheel's engine has the
    device path (its device report's `built`). Raises DevicePathError for a GPU NDArray the engine cannot take."""
    if device_type in HOST_CONTEXTS:
        return HOST
    if device_type == "gpu":
        if device_buffers:
            return DEVICE
        raise DevicePathError(refusal(context or "gpu", manifest))
    raise DevicePathError("not supported: an NDArray of context %s in perseus.mxnet (cpu and gpu contexts only)"
                          % (context or device_type))


_report_lock = threading.Lock()
_device_buffers = None  # type: Optional[bool]


def _engine_has_device_buffers():
    # type: () -> bool
    """The device report of this wheel's engine (perseus.engine.device_report), read once per process."""
    global _device_buffers
    with _report_lock:
        if _device_buffers is None:
            from perseus import engine

            from . import _engine
            _engine.use_binding_engine()
            _device_buffers = bool(engine.device_report().get("built"))
        return _device_buffers


def path_of(array):
    # type: (Any) -> str
    """The path `array` takes: HOST for a host context (the report is not read), else choose_path's answer."""
    context = array.context
    if context.device_type in HOST_CONTEXTS:
        return HOST
    from . import _native
    return choose_path(context.device_type, _engine_has_device_buffers(), _native.read_manifest(), str(context))


def on_device(array):
    # type: (Any) -> bool
    return path_of(array) == DEVICE


def dtype_name(array, allowed, framework="perseus.mxnet"):
    # type: (Any, Sequence[str], str) -> str
    from perseus.horovod_kit.host_collectives import check_dtype  # the host path's message

    name = np.dtype(array.dtype).name
    check_dtype(framework, name, allowed)
    return name


def data_pointer(array):
    # type: (Any) -> int
    """The address of `array`'s data (its offset included: a slice's first element) once every MXNet operation
    pushed before that writes or reads it is complete (the module's documentation: why this ordering)."""
    from mxnet.base import _LIB, check_call

    check_call(_LIB.MXNDArrayWaitToWrite(array.handle))
    address = ctypes.c_void_p()
    check_call(_LIB.MXNDArrayGetData(array.handle, ctypes.byref(address)))
    return address.value or 0


def allreduce_async(engine, name, array, op, dtype):
    # type: (Any, str, Any, str, str) -> Any
    """In place on a GPU NDArray under the engine's wire policy for `dtype` (fp32: fp16 on the wire by default)."""
    address = data_pointer(array)
    return engine.allreduce_device_async(name, address, dtype, tuple(array.shape) or (1,), array.context.device_id,
                                         op=op, keepalive=array)


def broadcast_async(engine, name, array, root):
    # type: (Any, str, Any, int) -> Any
    """In place from `root` (the group's rank): the array's bytes, any dtype."""
    nbytes = int(np.prod(array.shape, dtype=np.int64)) * np.dtype(array.dtype).itemsize
    address = data_pointer(array)
    return engine.broadcast_device_async(name, address, "uint8", (nbytes,), array.context.device_id, root=root,
                                         keepalive=array)
