// The "avx512" path (compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mpopcnt).
#include "avx512_impl.h"

namespace perseus {
namespace cpu {
namespace {
const Kernels kAvx512{"avx512", compress<false, false>, compress<true, false>, decompress<false>,
                      decompress<true>};
}  // namespace

const Kernels& avx512_kernels() { return kAvx512; }

}  // namespace cpu
}  // namespace perseus
