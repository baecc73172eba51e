// The CUDA entry points of a core built without a CUDA toolkit: they fail loudly.
#include "perseus/core.h"
#include "status.h"

namespace {
perseus_status no_cuda() {
  return perseus::fail(PERSEUS_ERR_UNSUPPORTED,
                       "this perseus core was built without CUDA: install the wheel built for your CUDA "
                       "version (or rebuild with -DPERSEUS_WITH_CUDA=ON)");
}
}  // namespace

extern "C" {

int perseus_has_cuda(void) { return 0; }
const char* perseus_cuda_architectures(void) { return ""; }

perseus_status perseus_cuda_compress(const float*, void*, perseus_half_dtype, uint64_t, float,
                                     unsigned long long*, void*) {
  return no_cuda();
}
perseus_status perseus_cuda_decompress(const void*, perseus_half_dtype, float*, uint64_t, float, int64_t,
                                       unsigned long long*, void*) {
  return no_cuda();
}
perseus_status perseus_cuda_pack(const void* const*, const uint64_t*, uint64_t, void*, void*) { return no_cuda(); }
perseus_status perseus_cuda_unpack(const void*, void* const*, const uint64_t*, uint64_t, void*) { return no_cuda(); }
perseus_status perseus_cuda_downsample_gather(const void*, void*, uint64_t, uint64_t, uint64_t, uint64_t, void*) {
  return no_cuda();
}
perseus_status perseus_cuda_downsample_gather_momentum(const float*, float*, float*, uint64_t, uint64_t, uint64_t,
                                                       float, void*) {
  return no_cuda();
}
perseus_status perseus_cuda_downsample_scatter(const void*, void*, uint64_t, uint64_t, uint64_t, uint64_t, int,
                                               void*) {
  return no_cuda();
}

}  // extern "C"
