// Argument checks shared by the CPU and CUDA entry points (messages name the value and the fix).
#pragma once

#include <cmath>
#include <string>

#include "perseus/core.h"
#include "status.h"

namespace perseus {

inline perseus_status check_dtype(perseus_half_dtype dtype) {
  if (dtype == PERSEUS_FLOAT16 || dtype == PERSEUS_BFLOAT16) return PERSEUS_OK;
  return fail(PERSEUS_ERR_INVALID_ARGUMENT, "dtype " + std::to_string(int(dtype)) +
                                                ": must be PERSEUS_FLOAT16 (1) or PERSEUS_BFLOAT16 (2)");
}

inline perseus_status check_scale(float scale) {
  if (std::isfinite(scale) && scale > 0.0f) return PERSEUS_OK;
  return fail(PERSEUS_ERR_INVALID_ARGUMENT,
              "gradient scale " + std::to_string(scale) +
                  ": must be finite and > 0 (PERSEUS_ALLREDUCE_GRADIENT_SCALE, default 10)");
}

inline perseus_status check_pointers(const void* a, const void* b, uint64_t n, const char* op) {
  if (n == 0 || (a != nullptr && b != nullptr)) return PERSEUS_OK;
  return fail(PERSEUS_ERR_INVALID_ARGUMENT, std::string(op) + ": null buffer for " +
                                                std::to_string(n) + " elements");
}

// factor = (float)(1 / (scale * world_size)), computed in double so that it is rounded once.
inline perseus_status decompress_factor(float scale, int64_t world_size, float* factor) {
  if (perseus_status s = check_scale(scale)) return s;
  if (world_size < 1) {
    return fail(PERSEUS_ERR_INVALID_ARGUMENT,
                "world size " + std::to_string(world_size) + ": must be >= 1 (the number of ranks averaged)");
  }
  *factor = static_cast<float>(1.0 / (static_cast<double>(scale) * static_cast<double>(world_size)));
  if (!(*factor > 0.0f) || std::isinf(*factor)) {
    return fail(PERSEUS_ERR_INVALID_ARGUMENT, "1 / (scale * world size) = 1 / (" + std::to_string(scale) +
                                                  " * " + std::to_string(world_size) +
                                                  ") is not a positive finite fp32 number");
  }
  return PERSEUS_OK;
}

inline perseus_status check_downsample(uint64_t n, uint64_t elem_size, bool check_elem) {
  if (n < 1) {
    return fail(PERSEUS_ERR_INVALID_ARGUMENT,
                "downsample n = 0: must be >= 1 (PERSEUS_DOWNSAMPLE_N_ELEMENTS, 1 sends everything)");
  }
  if (check_elem && elem_size != 2 && elem_size != 4 && elem_size != 8) {
    return fail(PERSEUS_ERR_INVALID_ARGUMENT,
                "element size " + std::to_string(elem_size) + " bytes: must be 2, 4 or 8");
  }
  return PERSEUS_OK;
}

}  // namespace perseus
