// A library built without -DPERSEUS_ENGINE_DEVICE=ON: the device-buffer entry points exist (one C ABI)
// and fail, saying how to get them.
#include <cstdio>

#include "c_api_hooks.h"
#include "errors.h"

using namespace perseus::engine;

namespace {
const char* kWhy = "not supported: this perseus engine was built without device buffers: configure native/ with "
                   "-DPERSEUS_ENGINE_DEVICE=ON (NCCL's and CUDA's headers from recipes/nccl/fetch.sh)";
}

namespace perseus::engine {
void Engine::run_device(Stream&, const std::shared_ptr<Op>& op) { op->finish(PERSEUS_ENGINE_UNSUPPORTED, kWhy); }
}  // namespace perseus::engine

namespace perseus::engine::c_api {
int abi_version_with_device_entry_points() { return PERSEUS_ENGINE_ABI_VERSION; }
}  // namespace perseus::engine::c_api

extern "C" {

perseus_engine_status perseus_engine_allreduce_device(perseus_engine*, const char*, void*, perseus_engine_dtype, int,
                                                      const int64_t*, perseus_engine_reduce_op, int,
                                                      perseus_engine_handle*) {
  return c_api::run_guarded([] { throw EngineError(PERSEUS_ENGINE_UNSUPPORTED, kWhy); });
}

perseus_engine_status perseus_engine_broadcast_device(perseus_engine*, const char*, void*, perseus_engine_dtype, int,
                                                      const int64_t*, int, int, perseus_engine_handle*) {
  return c_api::run_guarded([] { throw EngineError(PERSEUS_ENGINE_UNSUPPORTED, kWhy); });
}

perseus_engine_status perseus_engine_device_report_get(perseus_engine_device_report* report) {
  return c_api::run_guarded([&] {
    if (report == nullptr) throw invalid_argument("perseus engine: report is NULL");
    *report = perseus_engine_device_report{};
    std::snprintf(report->cuda_message, sizeof(report->cuda_message), "%s", kWhy);
    std::snprintf(report->nccl_message, sizeof(report->nccl_message), "%s", kWhy);
  });
}

perseus_engine_status perseus_engine_library_dir_add(const char*) { return PERSEUS_ENGINE_OK; }

}  // extern "C"
