// CPU entry points of compression: validate, then run the dispatched kernels.
#include "cpu/dispatch.h"
#include "perseus/core.h"
#include "status.h"
#include "validate.h"

extern "C" {

perseus_status perseus_compress(const float* src, void* dst, perseus_half_dtype dtype, uint64_t n,
                                float scale, uint64_t* nonfinite) {
  using namespace perseus;
  if (perseus_status s = check_dtype(dtype)) return s;
  if (perseus_status s = check_scale(scale)) return s;
  if (perseus_status s = check_pointers(src, dst, n, "compress")) return s;
  const cpu::Kernels* kernels = nullptr;
  if (perseus_status s = cpu::active_kernels(&kernels)) return s;
  auto* out = static_cast<uint16_t*>(dst);
  const uint64_t count = dtype == PERSEUS_FLOAT16 ? kernels->compress_f16(src, out, n, scale)
                                                  : kernels->compress_bf16(src, out, n, scale);
  if (nonfinite) *nonfinite = count;
  return ok();
}

perseus_status perseus_decompress_factor(float scale, int64_t world_size, float* factor) {
  if (perseus_status s = perseus::decompress_factor(scale, world_size, factor)) return s;
  return perseus::ok();
}

perseus_status perseus_decompress(const void* src, perseus_half_dtype dtype, float* dst, uint64_t n,
                                  float scale, int64_t world_size, uint64_t* nonfinite) {
  using namespace perseus;
  if (perseus_status s = check_dtype(dtype)) return s;
  float factor = 0.0f;
  if (perseus_status s = decompress_factor(scale, world_size, &factor)) return s;
  if (perseus_status s = check_pointers(src, dst, n, "decompress")) return s;
  const cpu::Kernels* kernels = nullptr;
  if (perseus_status s = cpu::active_kernels(&kernels)) return s;
  const auto* in = static_cast<const uint16_t*>(src);
  const uint64_t count = dtype == PERSEUS_FLOAT16 ? kernels->decompress_f16(in, dst, n, factor)
                                                  : kernels->decompress_bf16(in, dst, n, factor);
  if (nonfinite) *nonfinite = count;
  return ok();
}

}  // extern "C"
