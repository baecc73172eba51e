#include "cuda_loader.h"

#include <mutex>

#include "errors.h"
#include "perseus/variables.h"

namespace perseus::engine {

CudaRuntime& CudaRuntime::get() {
  static CudaRuntime* runtime = new CudaRuntime();  // never destroyed: engine threads may outlive statics
  return *runtime;
}

CudaRuntime::CudaRuntime() {
  // CUDA 12 and 13, and 11 (TensorFlow 2.14's CUDA 11.8 build loads libcudart.so.11.0: its copy is used)
  lib_ = load_nvidia_library(PERSEUS_ENV_CUDART_LIBRARY, {"cuda_runtime", "cu13"},
                             {"libcudart.so.12", "libcudart.so.13", "libcudart.so.11.0"});
  if (lib_.handle == nullptr) {
    std::string tried;
    for (const auto& t : lib_.tried) tried += (tried.empty() ? "" : "; ") + t;
    why_not_ = "no CUDA runtime library (libcudart.so.12) found (tried: " + tried +
               "): pip install nvidia-cuda-runtime-cu12, or set PERSEUS_CUDART_LIBRARY to a libcudart.so";
    return;
  }
  try {
#define PERSEUS_CUDA_SYMBOL(field, name) field = reinterpret_cast<decltype(field)>(symbol(lib_, #name))
    PERSEUS_CUDA_SYMBOL(GetDeviceCount, cudaGetDeviceCount);
    PERSEUS_CUDA_SYMBOL(GetErrorString, cudaGetErrorString);
    PERSEUS_CUDA_SYMBOL(GetErrorName, cudaGetErrorName);
    PERSEUS_CUDA_SYMBOL(RuntimeGetVersion, cudaRuntimeGetVersion);
    PERSEUS_CUDA_SYMBOL(SetDevice, cudaSetDevice);
    PERSEUS_CUDA_SYMBOL(GetDevice, cudaGetDevice);
    PERSEUS_CUDA_SYMBOL(DeviceGetPCIBusId, cudaDeviceGetPCIBusId);
    PERSEUS_CUDA_SYMBOL(Malloc, cudaMalloc);
    PERSEUS_CUDA_SYMBOL(Free, cudaFree);
    PERSEUS_CUDA_SYMBOL(MallocHost, cudaMallocHost);
    PERSEUS_CUDA_SYMBOL(FreeHost, cudaFreeHost);
    PERSEUS_CUDA_SYMBOL(MemcpyAsync, cudaMemcpyAsync);
    PERSEUS_CUDA_SYMBOL(MemsetAsync, cudaMemsetAsync);
    PERSEUS_CUDA_SYMBOL(StreamCreateWithFlags, cudaStreamCreateWithFlags);
    PERSEUS_CUDA_SYMBOL(StreamDestroy, cudaStreamDestroy);
    PERSEUS_CUDA_SYMBOL(StreamSynchronize, cudaStreamSynchronize);
    PERSEUS_CUDA_SYMBOL(StreamQuery, cudaStreamQuery);
#undef PERSEUS_CUDA_SYMBOL
  } catch (const std::exception& e) {
    why_not_ = e.what();
  }
}

CudaRuntime::DeviceCount CudaRuntime::device_count() {
  DeviceCount out;
  if (!available()) {
    out.text = why_not_;
    return out;
  }
  static std::mutex mu;  // cudaGetDeviceCount initialises the runtime: once, not from two threads at a time
  std::lock_guard<std::mutex> lock(mu);
  cudaError_t status = GetDeviceCount(&out.count);
  out.error = int(status);
  if (status != cudaSuccess) {
    out.count = 0;
    out.text = std::string(GetErrorName(status)) + ": " + GetErrorString(status);
  }
  return out;
}

int CudaRuntime::runtime_version() {
  int v = 0;
  if (available() && RuntimeGetVersion(&v) != cudaSuccess) v = 0;
  return v;
}

void CudaRuntime::check(cudaError_t status, const char* what) const {
  if (status == cudaSuccess) return;
  throw EngineError(PERSEUS_ENGINE_COMMUNICATION, std::string("perseus engine: ") + what + " failed: " +
                                                      GetErrorName(status) + ": " + GetErrorString(status));
}

void check_device(int device) {
  auto& rt = CudaRuntime::get();
  auto count = rt.device_count();
  if (count.count == 0) {
    std::string detail = count.error < 0 ? "unavailable: " + count.text
                                         : std::to_string(count.error) + (count.text.empty() ? "" : " " + count.text);
    if (count.error == 0) detail = "0";
    throw unsupported("no CUDA device visible (cudaGetDeviceCount=" + detail +
                      "): device buffers need a CUDA device and driver on every rank; submit host buffers instead");
  }
  if (device < 0 || device >= count.count) {
    throw invalid_argument("perseus engine: CUDA device " + std::to_string(device) + " is not one of the " +
                           std::to_string(count.count) + " this process sees (0.." + std::to_string(count.count - 1) +
                           "; CUDA_VISIBLE_DEVICES limits them)");
  }
}

}  // namespace perseus::engine
