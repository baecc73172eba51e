// A library built without -DPERSEUS_ENGINE_DEVICE=ON: the device-buffer entry points exist (one C ABI)
// and fail, saying how to get them.
#include <cstdio>

#include "device_api.h"
#include "errors.h"

namespace perseus::engine {
namespace {
const char* kWhy = "this perseus engine was built without device buffers: configure native/ with "
                   "-DPERSEUS_ENGINE_DEVICE=ON (NCCL's and CUDA's headers from recipes/nccl/fetch.sh)";
}

void Engine::run_device(Stream&, const std::shared_ptr<Op>& op) {
  op->finish(PERSEUS_ENGINE_UNSUPPORTED, std::string("not supported: ") + kWhy);
}

namespace device_api {

int64_t allreduce(Engine&, Request, void*, int, int) { throw unsupported(kWhy); }
int64_t broadcast(Engine&, Request, void*, int, int) { throw unsupported(kWhy); }

void report(perseus_engine_device_report* out) {
  *out = perseus_engine_device_report{};
  std::snprintf(out->cuda_message, sizeof(out->cuda_message), "not supported: %s", kWhy);
  std::snprintf(out->nccl_message, sizeof(out->nccl_message), "not supported: %s", kWhy);
}

void add_library_dir(const char*) {}

}  // namespace device_api
}  // namespace perseus::engine
