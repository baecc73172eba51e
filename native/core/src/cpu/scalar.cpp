// The scalar path: portable, and the definition the vectorised paths are tested against.
#include "../half_bits.h"
#include "kernels.h"

namespace perseus {
namespace cpu {
namespace {

uint64_t compress_f16(const float* src, uint16_t* dst, size_t n, float scale) {
  uint64_t nonfinite = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = float_to_half_bits(src[i] * scale);
    nonfinite += (h & 0x7c00u) == 0x7c00u;
    dst[i] = h;
  }
  return nonfinite;
}

uint64_t compress_bf16(const float* src, uint16_t* dst, size_t n, float scale) {
  uint64_t nonfinite = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = float_to_bf16_bits(src[i] * scale);
    nonfinite += (h & 0x7f80u) == 0x7f80u;
    dst[i] = h;
  }
  return nonfinite;
}

inline bool is_nonfinite(float f) { return (float_bits(f) & 0x7f800000u) == 0x7f800000u; }

uint64_t decompress_f16(const uint16_t* src, float* dst, size_t n, float factor) {
  uint64_t nonfinite = 0;
  for (size_t i = 0; i < n; ++i) {
    const float f = half_bits_to_float(src[i]) * factor;
    nonfinite += is_nonfinite(f);
    dst[i] = f;
  }
  return nonfinite;
}

uint64_t decompress_bf16(const uint16_t* src, float* dst, size_t n, float factor) {
  uint64_t nonfinite = 0;
  for (size_t i = 0; i < n; ++i) {
    const float f = bf16_bits_to_float(src[i]) * factor;
    nonfinite += is_nonfinite(f);
    dst[i] = f;
  }
  return nonfinite;
}

const Kernels kScalar{"scalar", compress_f16, compress_bf16, decompress_f16, decompress_bf16};

}  // namespace

const Kernels& scalar_kernels() { return kScalar; }

}  // namespace cpu
}  // namespace perseus
