// The device-buffer entry points (device_api.h): argument checks, the device check, submission, the report.
#include <cstdio>
#include <string>

#include "cuda_loader.h"
#include "device_api.h"
#include "dl_search.h"
#include "errors.h"
#include "nccl_loader.h"
#include "perseus/core.h"

namespace perseus::engine::device_api {
namespace {

void fill(char* out, size_t size, const std::string& text) { std::snprintf(out, size, "%s", text.c_str()); }

int64_t submit(Engine& engine, Request r, void* buffer, int device) {
  if (numel(r.shape) > 0 && buffer == nullptr) throw invalid_argument("perseus engine: device buffer is NULL");
  check_device(device);
  r.device = device;
  return engine.submit(std::move(r), buffer, nullptr);
}

}  // namespace

int64_t allreduce(Engine& engine, Request r, void* buffer, int op, int device) {
  if (op != PERSEUS_ENGINE_SUM && op != PERSEUS_ENGINE_AVERAGE) {
    throw invalid_argument("perseus engine: '" + r.name + "': reduce op must be sum (0) or average (1)");
  }
  if (op == PERSEUS_ENGINE_AVERAGE &&
      (r.dtype == PERSEUS_ENGINE_INT32 || r.dtype == PERSEUS_ENGINE_INT64 || r.dtype == PERSEUS_ENGINE_UINT8)) {
    throw unsupported("average of integer tensors ('" + r.name + "'): use sum and divide");
  }
  r.op = op;
  return submit(engine, std::move(r), buffer, device);
}

int64_t broadcast(Engine& engine, Request r, void* buffer, int root, int device) {
  const int size = engine.info().size;
  if (root < 0 || root >= size) {
    throw invalid_argument("perseus engine: broadcast '" + r.name + "': root " + std::to_string(root) +
                           " is not a rank of this job (0.." + std::to_string(size - 1) + ")");
  }
  r.root = root;
  return submit(engine, std::move(r), buffer, device);
}

void report(perseus_engine_device_report* out) {
  *out = perseus_engine_device_report{};
  out->built = 1;
  out->cuda_kernels = perseus_has_cuda();
  auto& rt = CudaRuntime::get();
  auto count = rt.device_count();
  out->cuda_runtime_version = rt.runtime_version();
  out->device_count = count.count;
  out->device_count_status = count.error;
  fill(out->cuda_library, sizeof(out->cuda_library), rt.path());
  if (count.count == 0) {
    fill(out->cuda_message, sizeof(out->cuda_message), count.error == 0 ? "cudaGetDeviceCount=0: no CUDA device" : count.text);
  }
  Nccl& nccl = Nccl::get();
  out->nccl_version = nccl.available() ? nccl.version() : 0;
  fill(out->nccl_library, sizeof(out->nccl_library), nccl.available() ? nccl.path() : "");
  fill(out->nccl_message, sizeof(out->nccl_message), nccl.why_not());
}

void add_library_dir(const char* dir) { perseus::engine::add_library_dir(std::string(dir)); }

}  // namespace perseus::engine::device_api
