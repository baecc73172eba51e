// Fusion plan of one cycle's agreed fp32 allreduces (same reduce op): which tensors, or slices of
// them, travel together in one collective. The core's planner (PERSEUS_ALLREDUCE_FUSION) decides the
// groups; with automatic fusion a tensor above kPartitionBytes is cut into near-equal slices of at
// most that size first (tensor partitioning, as the Python engine and BytePS do). A pure function of
// the sizes: every rank computes the same plan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace perseus::engine {

// Also the automatic target group size, and so the unit of the stream pipeline. 2 MiB rather than 4: the
// pipeline fills and drains in half the time at the ends of every collective (2x2 benchmark: wire alone
// 0.258 s against 0.275, the step 3 % faster), and the one-level 2-rank allreduce is unchanged at 1-64 MiB.
constexpr uint64_t kPartitionBytes = uint64_t(2) << 20;

struct Unit {
  size_t tensor;    // index into the planned list
  uint64_t offset;  // first element of the slice
  uint64_t numel;   // elements in the slice
};

// fusion: -1 automatic, 0 none, 1..128 granularity (perseus_plan_buckets). Throws std::runtime_error
// with the core's message when the planner refuses.
std::vector<std::vector<Unit>> plan_fusion(const std::vector<uint64_t>& numels, size_t element_size, int fusion);

}  // namespace perseus::engine
