"""One rank of bench/gpu_device_check.py on a GPU machine: device buffers through the engine against the same
data through the host path, bit for bit. Device memory through ctypes on the CUDA runtime the engine loaded.
Cases: report (the engine's device report), check (allreduce fp32 sum/average, fp16 sum, broadcast)."""

import array
import ctypes
import json
import os
import struct
import sys
import time

from perseus import engine


def out(**fields):
    print("REPORT " + json.dumps(fields), flush=True)


class Cuda:
    def __init__(self, path: str) -> None:
        self.lib = ctypes.CDLL(path)

    def call(self, name, *args):
        status = getattr(self.lib, name)(*args)
        if status != 0:
            self.lib.cudaGetErrorString.restype = ctypes.c_char_p
            raise RuntimeError("{}: {}".format(name, self.lib.cudaGetErrorString(status).decode()))

    def to_device(self, host: array.array) -> ctypes.c_void_p:
        ptr = ctypes.c_void_p()
        nbytes = len(host) * host.itemsize
        self.call("cudaMalloc", ctypes.byref(ptr), ctypes.c_size_t(nbytes))
        src = (ctypes.c_char * nbytes).from_buffer(host)
        self.call("cudaMemcpy", ptr, src, ctypes.c_size_t(nbytes), 1)  # cudaMemcpyHostToDevice
        # the engine's contract (docs/device.md): the buffer is written before the submit. A cudaMemcpy from
        # pageable memory returns once the bytes are staged, before its DMA lands, and the engine's stream does
        # not wait for the legacy default stream: without this the engine could read stale bytes, or its result
        # be overwritten by the late DMA
        if os.environ.get("GPU_CHECK_SKIP_WRITE_SYNC") != "1":
            self.call("cudaDeviceSynchronize")
        return ptr

    def to_host(self, ptr: ctypes.c_void_p, like: array.array) -> array.array:
        back = array.array(like.typecode, bytes(len(like) * like.itemsize))
        dst = (ctypes.c_char * (len(back) * back.itemsize)).from_buffer(back)
        self.call("cudaMemcpy", dst, ptr, ctypes.c_size_t(len(back) * back.itemsize), 2)  # DeviceToHost
        return back


def values(rank: int, n: int, typecode: str) -> array.array:
    return array.array(typecode, [((i * 7919 + rank * 104729) % 20011) / 997.0 - 10.0 for i in range(n)])


def case_report() -> None:
    out(rank=0, device=engine.device_report())


def case_check() -> None:
    eng = engine.Engine.from_environment()
    rank, device = eng.rank, int(os.environ.get("GPU_CHECK_DEVICE", "0"))
    cuda = Cuda(engine.device_report()["cuda_library"])
    cuda.call("cudaSetDevice", device)
    results = {}
    for name, typecode, dtype, op, n in (("f32-sum", "f", "float32", "sum", (1 << 20) + 3),
                                         ("f32-avg", "f", "float32", "average", 4099),
                                         ("f16-sum", "e", "float16", "sum", 5000)):
        host = values(rank, n, "f")
        if typecode == "e":  # fp16 bits in an unsigned 16-bit array
            host = array.array("H", struct.pack("<{}e".format(n), *host))
        dev = cuda.to_device(host)
        start = time.perf_counter()
        eng.allreduce_device_async("dev/" + name, dev.value, dtype, (n,), device, op=op).wait()
        took = time.perf_counter() - start
        eng.allreduce("host/" + name, host, op=op, dtype=dtype)
        back = cuda.to_host(dev, host)
        cuda.call("cudaFree", dev)
        bits = "H" if typecode == "e" else "I"
        differing = sum(1 for a, b in zip(array.array(bits, back.tobytes()), array.array(bits, host.tobytes())) if a != b)
        results[name] = {"equal": differing == 0, "elements_differing": differing, "seconds": took}
    bcast = values(rank, 1000, "f")
    dev = cuda.to_device(bcast)
    eng.broadcast_device_async("dev/bcast", dev.value, "float32", (1000,), device, root=eng.size - 1).wait()
    eng.broadcast("host/bcast", bcast, root=eng.size - 1)
    results["broadcast"] = {"equal": cuda.to_host(dev, bcast).tobytes() == bcast.tobytes()}
    out(rank=rank, size=eng.size, results=results, info=eng.info())
    eng.close()


if __name__ == "__main__":
    globals()["case_" + sys.argv[1]]()
