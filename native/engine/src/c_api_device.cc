// The C ABI of device buffers (perseus/engine.h, ABI 3): argument checks, the device check, submission.
#include <cstdio>
#include <string>

#include "c_api_hooks.h"
#include "cuda_loader.h"
#include "dl_search.h"
#include "errors.h"
#include "nccl_loader.h"
#include "perseus/core.h"

using namespace perseus::engine;

namespace {

void fill(char* out, size_t size, const std::string& text) { std::snprintf(out, size, "%s", text.c_str()); }

int64_t submit_device(perseus_engine* engine, Request r, void* buffer, int device) {
  Engine& e = c_api::engine_of(engine);
  if (numel(r.shape) > 0 && buffer == nullptr) throw invalid_argument("perseus engine: device buffer is NULL");
  check_device(device);
  r.device = device;
  return e.submit(std::move(r), buffer, nullptr);
}

}  // namespace

namespace perseus::engine::c_api {
int abi_version_with_device_entry_points() { return PERSEUS_ENGINE_ABI_VERSION; }
}  // namespace perseus::engine::c_api

extern "C" {

perseus_engine_status perseus_engine_allreduce_device(perseus_engine* engine, const char* name, void* device_buffer,
                                                      perseus_engine_dtype dtype, int ndim, const int64_t* shape,
                                                      perseus_engine_reduce_op op, int device,
                                                      perseus_engine_handle* handle) {
  return c_api::run_guarded([&] {
    if (handle == nullptr) throw invalid_argument("perseus engine: handle (output) is NULL");
    Request r = c_api::request(name, Kind::kAllreduce, dtype, ndim, shape);
    if (op != PERSEUS_ENGINE_SUM && op != PERSEUS_ENGINE_AVERAGE) {
      throw invalid_argument("perseus engine: '" + r.name + "': reduce op must be sum (0) or average (1)");
    }
    if (op == PERSEUS_ENGINE_AVERAGE && (dtype == PERSEUS_ENGINE_INT32 || dtype == PERSEUS_ENGINE_INT64 ||
                                         dtype == PERSEUS_ENGINE_UINT8)) {
      throw unsupported("average of integer tensors ('" + r.name + "'): use sum and divide");
    }
    r.op = op;
    *handle = submit_device(engine, std::move(r), device_buffer, device);
  });
}

perseus_engine_status perseus_engine_broadcast_device(perseus_engine* engine, const char* name, void* device_buffer,
                                                      perseus_engine_dtype dtype, int ndim, const int64_t* shape,
                                                      int root, int device, perseus_engine_handle* handle) {
  return c_api::run_guarded([&] {
    if (handle == nullptr) throw invalid_argument("perseus engine: handle (output) is NULL");
    Request r = c_api::request(name, Kind::kBroadcast, dtype, ndim, shape);
    const int size = c_api::engine_of(engine).info().size;
    if (root < 0 || root >= size) {
      throw invalid_argument("perseus engine: broadcast '" + r.name + "': root " + std::to_string(root) +
                             " is not a rank of this job (0.." + std::to_string(size - 1) + ")");
    }
    r.root = root;
    *handle = submit_device(engine, std::move(r), device_buffer, device);
  });
}

perseus_engine_status perseus_engine_device_report_get(perseus_engine_device_report* report) {
  return c_api::run_guarded([&] {
    if (report == nullptr) throw invalid_argument("perseus engine: report is NULL");
    *report = perseus_engine_device_report{};
    report->built = 1;
    report->cuda_kernels = perseus_has_cuda();
    auto& rt = CudaRuntime::get();
    auto count = rt.device_count();
    report->cuda_runtime_version = rt.runtime_version();
    report->device_count = count.count;
    report->device_count_status = count.error;
    fill(report->cuda_library, sizeof(report->cuda_library), rt.path());
    if (count.count == 0) {
      fill(report->cuda_message, sizeof(report->cuda_message),
           count.error == 0 ? "cudaGetDeviceCount=0: no CUDA device" : count.text);
    }
    Nccl& nccl = Nccl::get();
    report->nccl_version = nccl.available() ? nccl.version() : 0;
    fill(report->nccl_library, sizeof(report->nccl_library), nccl.available() ? nccl.path() : "");
    fill(report->nccl_message, sizeof(report->nccl_message), nccl.why_not());
  });
}

perseus_engine_status perseus_engine_library_dir_add(const char* dir) {
  return c_api::run_guarded([&] {
    if (dir == nullptr) throw invalid_argument("perseus engine: dir is NULL");
    add_library_dir(dir);
  });
}

}  // extern "C"
