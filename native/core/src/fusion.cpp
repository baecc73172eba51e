// Fusion planning (PERSEUS_ALLREDUCE_FUSION) and packing of tensors into a fused buffer.
#include <cstring>
#include <string>

#include "perseus/core.h"
#include "status.h"

extern "C" {

perseus_status perseus_plan_buckets(const uint64_t* sizes_in_bytes, uint64_t count, int fusion,
                                    uint32_t* bucket_of, uint64_t* num_buckets) {
  using perseus::fail;
  if (fusion != PERSEUS_FUSION_AUTO && (fusion < 0 || fusion > PERSEUS_FUSION_MAX)) {
    return fail(PERSEUS_ERR_INVALID_ARGUMENT,
                "fusion granularity " + std::to_string(fusion) +
                    ": must be 0 (no fusion) .. 128 (PERSEUS_ALLREDUCE_FUSION), or unset for auto");
  }
  if (num_buckets == nullptr || (count > 0 && (sizes_in_bytes == nullptr || bucket_of == nullptr))) {
    return fail(PERSEUS_ERR_INVALID_ARGUMENT, "plan_buckets: null sizes, bucket_of or num_buckets");
  }
  if (count > UINT32_MAX) {
    return fail(PERSEUS_ERR_INVALID_ARGUMENT, "plan_buckets: " + std::to_string(count) +
                                                  " tensors: at most 2^32 - 1 are supported");
  }
  uint64_t total = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (sizes_in_bytes[i] > UINT64_MAX - total) {
      return fail(PERSEUS_ERR_INVALID_ARGUMENT, "plan_buckets: the sizes add up to more than 2^64 bytes");
    }
    total += sizes_in_bytes[i];
  }
  if (count == 0) {
    *num_buckets = 0;
    return perseus::ok();
  }
  if (fusion == 0) {
    for (uint64_t i = 0; i < count; ++i) bucket_of[i] = static_cast<uint32_t>(i);
    *num_buckets = count;
    return perseus::ok();
  }
  uint64_t granularity = static_cast<uint64_t>(fusion);
  if (fusion == PERSEUS_FUSION_AUTO) {
    granularity = total / PERSEUS_AUTO_BUCKET_BYTES + (total % PERSEUS_AUTO_BUCKET_BYTES != 0);
    if (granularity < 1) granularity = 1;
    if (granularity > PERSEUS_FUSION_MAX) granularity = PERSEUS_FUSION_MAX;
  }
  uint64_t target = total / granularity + (total % granularity != 0);
  if (target == 0) target = 1;
  // A bucket closes once it holds >= target bytes and bytes remain for a next one, so every closed
  // bucket holds >= total / g: there are at most g buckets, and empty tensors never open one.
  uint32_t bucket = 0;
  uint64_t in_bucket = 0;
  uint64_t consumed = 0;
  for (uint64_t i = 0; i < count; ++i) {
    bucket_of[i] = bucket;
    in_bucket += sizes_in_bytes[i];
    consumed += sizes_in_bytes[i];
    if (in_bucket >= target && consumed < total) {
      ++bucket;
      in_bucket = 0;
    }
  }
  *num_buckets = static_cast<uint64_t>(bucket) + 1;
  return perseus::ok();
}

perseus_status perseus_pack(const void* const* srcs, const uint64_t* nbytes, uint64_t count, void* dst) {
  if (count > 0 && (srcs == nullptr || nbytes == nullptr || dst == nullptr)) {
    return perseus::fail(PERSEUS_ERR_INVALID_ARGUMENT, "pack: null buffer list, sizes or destination");
  }
  auto* out = static_cast<unsigned char*>(dst);
  for (uint64_t i = 0; i < count; ++i) {  // check all first: nothing is written on failure
    if (nbytes[i] != 0 && srcs[i] == nullptr) {
      return perseus::fail(PERSEUS_ERR_INVALID_ARGUMENT, "pack: buffer " + std::to_string(i) + " is null");
    }
  }
  for (uint64_t i = 0; i < count; ++i) {
    if (nbytes[i] == 0) continue;
    std::memcpy(out, srcs[i], nbytes[i]);
    out += nbytes[i];
  }
  return perseus::ok();
}

perseus_status perseus_unpack(const void* src, void* const* dsts, const uint64_t* nbytes, uint64_t count) {
  if (count > 0 && (dsts == nullptr || nbytes == nullptr || src == nullptr)) {
    return perseus::fail(PERSEUS_ERR_INVALID_ARGUMENT, "unpack: null buffer list, sizes or source");
  }
  const auto* in = static_cast<const unsigned char*>(src);
  for (uint64_t i = 0; i < count; ++i) {  // check all first: nothing is written on failure
    if (nbytes[i] != 0 && dsts[i] == nullptr) {
      return perseus::fail(PERSEUS_ERR_INVALID_ARGUMENT, "unpack: buffer " + std::to_string(i) + " is null");
    }
  }
  for (uint64_t i = 0; i < count; ++i) {
    if (nbytes[i] == 0) continue;
    std::memcpy(dsts[i], in, nbytes[i]);
    in += nbytes[i];
  }
  return perseus::ok();
}

}  // extern "C"
