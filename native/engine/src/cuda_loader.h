// The CUDA runtime, loaded at run time (libcudart.so.12 from nvidia-cuda-runtime-cu12 or the system; see
// dl_search.h): the engine needs only libc until a device buffer is submitted. Compiled against the CUDA
// runtime headers; every entry point is a pointer resolved by dlsym.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "dl_search.h"

namespace perseus::engine {

class CudaRuntime {
 public:
  // Loaded on the first call (once per process); never throws: see available() / why_not().
  static CudaRuntime& get();

  bool available() const { return lib_.handle != nullptr && why_not_.empty(); }
  const std::string& why_not() const { return why_not_; }
  const std::string& path() const { return lib_.path; }

  struct DeviceCount {
    int count = 0;
    int error = -1;    // cudaGetDeviceCount's status; -1: no runtime library
    std::string text;  // "" on success, else the error's name and text (or why no runtime was loaded)
  };
  DeviceCount device_count();
  int runtime_version();  // e.g. 12040; 0 without a runtime

  // Throws EngineError(COMMUNICATION) naming `what` and CUDA's message when `status` is an error.
  void check(cudaError_t status, const char* what) const;

  decltype(&cudaGetDeviceCount) GetDeviceCount = nullptr;
  decltype(&cudaGetErrorString) GetErrorString = nullptr;
  decltype(&cudaGetErrorName) GetErrorName = nullptr;
  decltype(&cudaRuntimeGetVersion) RuntimeGetVersion = nullptr;
  decltype(&cudaSetDevice) SetDevice = nullptr;
  decltype(&cudaGetDevice) GetDevice = nullptr;
  decltype(&cudaDeviceGetPCIBusId) DeviceGetPCIBusId = nullptr;
  decltype(&cudaMalloc) Malloc = nullptr;
  decltype(&cudaFree) Free = nullptr;
  decltype(&cudaMallocHost) MallocHost = nullptr;
  decltype(&cudaFreeHost) FreeHost = nullptr;
  decltype(&cudaMemcpyAsync) MemcpyAsync = nullptr;
  decltype(&cudaMemsetAsync) MemsetAsync = nullptr;
  decltype(&cudaStreamCreateWithFlags) StreamCreateWithFlags = nullptr;
  decltype(&cudaStreamDestroy) StreamDestroy = nullptr;
  decltype(&cudaStreamSynchronize) StreamSynchronize = nullptr;
  decltype(&cudaStreamQuery) StreamQuery = nullptr;

 private:
  CudaRuntime();
  Loaded lib_;
  std::string why_not_;
};

// Throws EngineError(UNSUPPORTED) "not supported: no CUDA device visible (cudaGetDeviceCount=...)" unless
// `device` is a device this process sees; INVALID_ARGUMENT for a device id out of range.
void check_device(int device);

}  // namespace perseus::engine
