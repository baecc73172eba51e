// Gossip downsampling (PERSEUS_DOWNSAMPLE_N_ELEMENTS) with the momentum residual
// (PERSEUS_GRADIENT_MOMENTUM); semantics in perseus/core.h.
#include <cstring>

#include "perseus/core.h"
#include "status.h"
#include "validate.h"

namespace perseus {
namespace {

template <typename T>
void gather(const T* src, T* dst, uint64_t numel, uint64_t n, uint64_t offset) {
  uint64_t j = 0;
  for (uint64_t i = offset; i < numel; i += n) dst[j++] = src[i];
}

template <typename T>
void scatter(const T* src, T* dst, uint64_t numel, uint64_t n, uint64_t offset, bool zero_unsent) {
  if (zero_unsent && n > 1) std::memset(dst, 0, numel * sizeof(T));
  uint64_t j = 0;
  for (uint64_t i = offset; i < numel; i += n) dst[i] = src[j++];
}

// Blocks of a few KB: the residual update streams through a block, then the strided pass over the
// same block finds it in L1, so every element is read and written once from memory.
constexpr uint64_t kBlock = 4096;

}  // namespace
}  // namespace perseus

extern "C" {

uint64_t perseus_downsample_count(uint64_t numel, uint64_t n, uint64_t step) {
  if (n == 0) return 0;
  const uint64_t offset = step % n;
  return numel > offset ? (numel - offset + n - 1) / n : 0;
}

perseus_status perseus_downsample_gather(const void* src, void* dst, uint64_t elem_size, uint64_t numel,
                                         uint64_t n, uint64_t step) {
  using namespace perseus;
  if (perseus_status s = check_downsample(n, elem_size, true)) return s;
  if (perseus_status s = check_pointers(src, dst, numel, "downsample_gather")) return s;
  const uint64_t offset = step % n;
  switch (elem_size) {
    case 2: gather(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), numel, n, offset); break;
    case 4: gather(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), numel, n, offset); break;
    default: gather(static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst), numel, n, offset); break;
  }
  return ok();
}

perseus_status perseus_downsample_scatter(const void* src, void* dst, uint64_t elem_size, uint64_t numel,
                                          uint64_t n, uint64_t step, int zero_unsent) {
  using namespace perseus;
  if (perseus_status s = check_downsample(n, elem_size, true)) return s;
  if (perseus_status s = check_pointers(src, dst, numel, "downsample_scatter")) return s;
  const uint64_t offset = step % n;
  const bool zero = zero_unsent != 0;
  switch (elem_size) {
    case 2: scatter(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), numel, n, offset, zero); break;
    case 4: scatter(static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), numel, n, offset, zero); break;
    default: scatter(static_cast<const uint64_t*>(src), static_cast<uint64_t*>(dst), numel, n, offset, zero); break;
  }
  return ok();
}

perseus_status perseus_downsample_gather_momentum(const float* src, float* residual, float* dst,
                                                  uint64_t numel, uint64_t n, uint64_t step,
                                                  float momentum) {
  using namespace perseus;
  if (perseus_status s = check_downsample(n, 4, false)) return s;
  if (perseus_status s = check_pointers(src, residual, numel, "downsample_gather_momentum")) return s;
  if (perseus_status s = check_pointers(src, dst, numel, "downsample_gather_momentum")) return s;
  if (!std::isfinite(momentum)) {
    return fail(PERSEUS_ERR_INVALID_ARGUMENT, "gradient momentum " + std::to_string(momentum) +
                                                  ": must be finite (PERSEUS_GRADIENT_MOMENTUM, default 1)");
  }
  const uint64_t offset = step % n;
  uint64_t next_sent = offset;  // the first sent index at or after the current block
  uint64_t j = 0;
  for (uint64_t begin = 0; begin < numel; begin += kBlock) {
    const uint64_t end = begin + kBlock < numel ? begin + kBlock : numel;
    for (uint64_t i = begin; i < end; ++i) {
      const float decayed = momentum * residual[i];  // rounded on its own: no FMA (-ffp-contract=off)
      residual[i] = src[i] + decayed;
    }
    for (; next_sent < end; next_sent += n) {
      dst[j++] = residual[next_sent];
      residual[next_sent] = 0.0f;
    }
  }
  return ok();
}

}  // extern "C"
