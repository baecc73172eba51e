"""CUDA tensors on the engine's device path: no copy to the host in the tensor's own dtype.

The engine (docs/device.md) reduces a device buffer in place: over NCCL when every rank of the group has its
own GPU, else compressed to fp16 on the device by the core's CUDA kernels and carried by Gloo through host
memory (half the PCIe bytes of fp32). It needs the buffer finished before the submit, so the training thread
only records a CUDA event on the tensor's current stream; one feeder thread per engine waits for that event
(cudaEventSynchronize, the GIL released) and submits. No device-wide or stream synchronisation happens on the
training thread. The engine synchronises its own stream before a collective completes, so the result is
visible to every stream of the process when the handle's wait() returns.

Calls of one engine are submitted in the order they were made (one feeder thread), and names are agreed by
the engine's negotiation, so ranks need not record their events in the same order.
"""

import queue
import threading
from typing import Any, Callable, Dict, Optional

import torch

from perseus import engine as native

_ENGINE_DTYPES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
                  torch.float64: "float64", torch.int32: "int32", torch.int64: "int64", torch.uint8: "uint8"}


class DevicePathError(RuntimeError):
    """A CUDA tensor cannot take the engine's device path (the message names what to install or change)."""


_report_lock = threading.Lock()
_report: Optional[Dict[str, Any]] = None


def report() -> Dict[str, Any]:
    """The engine library's device report (perseus.engine.device_report), read once per process."""
    global _report
    with _report_lock:
        if _report is None:
            _report = dict(native.device_report())
        return _report


def check_supported(tensor: torch.Tensor) -> None:
    """Raise DevicePathError, naming the fix, when this binding's engine has no device buffers."""
    found = report()
    if not found.get("built"):
        from perseus.torch import _native
        try:
            manifest = _native.read_manifest()
            wheel = "perseus_torch {} (built for torch {}, {})".format(
                manifest.get("version"), manifest.get("torch_version"),
                "CUDA " + manifest["torch_cuda"] if manifest.get("torch_cuda") else "CPU only")
        except ImportError:
            wheel = "this perseus_torch"
        raise DevicePathError(
            "not supported: a CUDA tensor on {}{}, whose engine has no device buffers: install the perseus_torch "
            "wheel of your torch's CUDA cell (bash install_AIACC-Training.sh picks it), or build the binding "
            "against a CUDA build of torch".format(wheel, " ({})".format(tensor.device)))


def engine_dtype(tensor: torch.Tensor) -> str:
    name = _ENGINE_DTYPES.get(tensor.dtype)
    if name is None:
        raise TypeError("perseus: the engine has no {} on the device (it takes {})".format(
            tensor.dtype, ", ".join(sorted(_ENGINE_DTYPES.values()))))
    return name


class Submission:
    """A device collective: the CUDA event the training thread recorded, then the engine's handle. Behaves as a
    perseus.engine.Handle (wait(), poll()); `tensor` (and `keep`) stay referenced until it completes."""

    def __init__(self, submit: Callable[[], native.Handle], tensor: torch.Tensor, keep: Any = None) -> None:
        self.tensor = tensor
        self.keep = keep
        self.event = torch.cuda.Event()
        self.event.record(torch.cuda.current_stream(tensor.device))
        self._submit = submit
        self._submitted = threading.Event()
        self._handle: Optional[native.Handle] = None
        self._error: Optional[BaseException] = None

    def run_submit(self) -> None:
        try:
            self.event.synchronize()
            self._handle = self._submit()
        except BaseException as error:  # reaches the caller through wait()
            self._error = error
        finally:
            self._submitted.set()

    def poll(self) -> bool:
        if not self._submitted.is_set():
            return False
        return self._error is not None or (self._handle is not None and self._handle.poll())

    def wait(self) -> Any:
        self._submitted.wait()
        if self._error is not None:
            raise self._error
        assert self._handle is not None
        return self._handle.wait()


class Feeder:
    """One thread that submits device collectives once their tensors are written, in the order they came."""

    def __init__(self) -> None:
        self._queue: "queue.Queue[Optional[Submission]]" = queue.Queue()
        self._thread: Optional[threading.Thread] = None
        self._lock = threading.Lock()

    def add(self, submission: Submission) -> Submission:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="perseus-device-feeder", daemon=True)
                self._thread.start()
        self._queue.put(submission)
        return submission

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            item.run_submit()

    def stop(self, timeout: float = 10.0) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout)


def allreduce(engine: native.Engine, feeder: Feeder, name: str, tensor: torch.Tensor, op: str = "sum",
              keep: Any = None) -> Submission:
    """In place over all ranks: `tensor` is a contiguous CUDA tensor (the engine's wire policy applies to fp32)."""
    check_supported(tensor)
    dtype, shape = engine_dtype(tensor), tuple(tensor.shape) or (1,)
    device = tensor.device.index if tensor.device.index is not None else torch.cuda.current_device()

    def submit() -> native.Handle:
        return engine.allreduce_device_async(name, tensor.data_ptr(), dtype, shape, device, op=op, keepalive=tensor)
    return feeder.add(Submission(submit, tensor, keep))


def broadcast(engine: native.Engine, feeder: Feeder, name: str, tensor: torch.Tensor, root: int) -> Submission:
    """In place from `root`: any dtype travels as its bytes."""
    check_supported(tensor)
    nbytes = tensor.numel() * tensor.element_size()
    device = tensor.device.index if tensor.device.index is not None else torch.cuda.current_device()

    def submit() -> native.Handle:
        return engine.broadcast_device_async(name, tensor.data_ptr(), "uint8", (nbytes,), device, root=root,
                                             keepalive=tensor)
    return feeder.add(Submission(submit, tensor))
