// Gloo reduce functions (c = a + b over n elements) per perseus_engine_dtype. fp16/bf16 are added
// in fp32 through the core's dispatched conversion kernels (exactly one rounding per addition).
#pragma once

#include <cstddef>

namespace perseus::engine {

using ReduceFunction = void (*)(void* c, const void* a, const void* b, size_t n);

// Throws EngineError(UNSUPPORTED) for a dtype without a sum.
ReduceFunction sum_function(int dtype);

}  // namespace perseus::engine
