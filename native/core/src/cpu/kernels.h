// One table of conversion kernels per CPU dispatch path. Every path computes exactly the bits of
// half_bits.h (the scalar path *is* half_bits.h); kernels return the number of non-finite outputs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace perseus {
namespace cpu {

using CompressFn = uint64_t (*)(const float* src, uint16_t* dst, size_t n, float scale);
using DecompressFn = uint64_t (*)(const uint16_t* src, float* dst, size_t n, float factor);

struct Kernels {
  const char* name;
  CompressFn compress_f16;
  CompressFn compress_bf16;
  DecompressFn decompress_f16;
  DecompressFn decompress_bf16;
};

// Outputs at least this large are written with non-temporal stores: they would only evict the
// cache (a 128 MB gradient bucket does not fit) and each normal store first reads its line.
constexpr size_t kStreamMinBytes = size_t(4) << 20;

const Kernels& scalar_kernels();
#if defined(PERSEUS_HAVE_X86_KERNELS)
const Kernels& avx2_kernels();
const Kernels& avx512_kernels();
#endif
#if defined(PERSEUS_HAVE_AVX512BF16_KERNELS)
const Kernels& avx512_bf16_kernels();
#endif

}  // namespace cpu
}  // namespace perseus
