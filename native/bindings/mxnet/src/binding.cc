// Compression on MXNet buffers over the static core, with MXNet's own type flags and version taken
// from the installed wheel's headers (mxnet/include).
#include "binding.h"

#include <mshadow/base.h>
#include <mxnet/base.h>

#include <atomic>
#include <string>

#include "perseus/core.h"

namespace {
thread_local std::string g_error;
std::atomic<perseus_engine*> g_engine{nullptr};

int half_dtype(int type_flag, perseus_half_dtype* out) {
  if (type_flag == mshadow::kFloat16) {
    *out = PERSEUS_FLOAT16;
    return 0;
  }
  g_error = "perseus_mxnet: the wire buffer must be float16 (MXNet type flag " +
            std::to_string(static_cast<int>(mshadow::kFloat16)) + "), got type flag " + std::to_string(type_flag);
  return PERSEUS_ERR_INVALID_ARGUMENT;
}

int status_of(perseus_status status) {
  if (status != PERSEUS_OK) g_error = perseus_last_error();
  return static_cast<int>(status);
}
}  // namespace

extern "C" {

int perseus_mxnet_header_version(void) { return MXNET_VERSION; }
const char* perseus_mxnet_core_version(void) { return perseus_core_version(); }
const char* perseus_mxnet_dispatch(void) { return perseus_dispatch_name(); }
const char* perseus_mxnet_last_error(void) { return g_error.c_str(); }
void perseus_mxnet_set_engine(perseus_engine* engine) { g_engine.store(engine); }
perseus_engine* perseus_mxnet_engine(void) { return g_engine.load(); }

int perseus_mxnet_compress(const float* src, void* dst, int dst_type_flag, uint64_t n, float scale,
                           uint64_t* nonfinite) {
  perseus_half_dtype dtype;
  if (int rc = half_dtype(dst_type_flag, &dtype)) return rc;
  return status_of(perseus_compress(src, dst, dtype, n, scale, nonfinite));
}

int perseus_mxnet_decompress(const void* src, int src_type_flag, float* dst, uint64_t n, float scale,
                             int64_t world_size, uint64_t* nonfinite) {
  perseus_half_dtype dtype;
  if (int rc = half_dtype(src_type_flag, &dtype)) return rc;
  return status_of(perseus_decompress(src, dtype, dst, n, scale, world_size, nonfinite));
}

}  // extern "C"
