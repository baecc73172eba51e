// The "avx512_bf16" path: the avx512 kernels with vcvtneps2bf16 (compiled with -mavx512bf16 too).
#include "avx512_impl.h"

#if !defined(__AVX512BF16__)
#error "avx512_bf16.cpp must be compiled with -mavx512bf16"
#endif

namespace perseus {
namespace cpu {
namespace {
const Kernels kAvx512Bf16{"avx512_bf16", compress<false, false>, compress<true, true>,
                          decompress<false>, decompress<true>};
}  // namespace

const Kernels& avx512_bf16_kernels() { return kAvx512Bf16; }

}  // namespace cpu
}  // namespace perseus
