#include "reduce_functions.h"

#include <cstdint>
#include <string>

#include "errors.h"
#include "gloo/math.h"
#include "perseus/core.h"
#include "perseus/engine.h"

namespace perseus::engine {
namespace {

template <perseus_half_dtype kHalf>
void half_sum(void* c, const void* a, const void* b, size_t n) {
  constexpr size_t kBlock = 1024;
  float fa[kBlock], fb[kBlock];
  uint64_t nonfinite = 0;
  for (size_t done = 0; done < n; done += kBlock) {
    size_t m = std::min(kBlock, n - done);
    // scale 1, world 1: the factor is exactly 1, so these are plain conversions
    perseus_decompress(static_cast<const uint16_t*>(a) + done, kHalf, fa, m, 1.0f, 1, &nonfinite);
    perseus_decompress(static_cast<const uint16_t*>(b) + done, kHalf, fb, m, 1.0f, 1, &nonfinite);
    for (size_t i = 0; i < m; ++i) fa[i] += fb[i];
    perseus_compress(fa, static_cast<uint16_t*>(c) + done, kHalf, m, 1.0f, &nonfinite);
  }
}

}  // namespace

ReduceFunction sum_function(int dtype) {
  switch (dtype) {
    case PERSEUS_ENGINE_FLOAT32: return &gloo::sum<float>;
    case PERSEUS_ENGINE_FLOAT64: return &gloo::sum<double>;
    case PERSEUS_ENGINE_INT32: return &gloo::sum<int32_t>;
    case PERSEUS_ENGINE_INT64: return &gloo::sum<int64_t>;
    case PERSEUS_ENGINE_UINT8: return &gloo::sum<uint8_t>;
    case PERSEUS_ENGINE_FLOAT16: return &half_sum<PERSEUS_FLOAT16>;
    case PERSEUS_ENGINE_BFLOAT16: return &half_sum<PERSEUS_BFLOAT16>;
    default: break;
  }
  throw unsupported("a sum of dtype " + std::to_string(dtype));
}

}  // namespace perseus::engine
