// Fusion plan: partitions cover every element once, in order; explicit fusion keeps tensors whole.
#include <gtest/gtest.h>

#include "plan.h"
#include "wire.h"

using namespace perseus::engine;

namespace {
// every tensor's elements covered exactly once, slices in order
void expect_cover(const std::vector<std::vector<Unit>>& groups, const std::vector<uint64_t>& numels) {
  std::vector<uint64_t> next(numels.size(), 0);
  for (const auto& g : groups) {
    for (const auto& u : g) {
      EXPECT_EQ(u.offset, next[u.tensor]);
      next[u.tensor] += u.numel;
    }
  }
  EXPECT_EQ(next, numels);
}
}  // namespace

TEST(Plan, AutomaticPartitionsLargeTensorsIntoSlicesOfAtMostThePartition) {
  std::vector<uint64_t> numels = {10, 2 * kPartitionBytes / 4 + 3, 100};  // two partitions + 12 B: three slices
  auto groups = plan_fusion(numels, 4, -1);
  expect_cover(groups, numels);
  size_t slices_of_big = 0;
  for (const auto& g : groups) {
    for (const auto& u : g) {
      if (u.tensor == 1) {
        ++slices_of_big;
        EXPECT_LE(u.numel * 4, kPartitionBytes);
      }
    }
  }
  EXPECT_EQ(slices_of_big, 3u);
  EXPECT_GE(groups.size(), 2u);  // the core's planner closes a group once it holds >= total / 3
}

TEST(Plan, SmallTensorsFuseIntoOneGroup) {
  std::vector<uint64_t> numels = {10, 20, 30, 40};
  auto groups = plan_fusion(numels, 4, -1);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].size(), 4u);
  expect_cover(groups, numels);
}

TEST(Plan, NoFusionIsOneGroupPerTensor) {
  std::vector<uint64_t> numels = {10, uint64_t(3) << 20, 30};
  auto groups = plan_fusion(numels, 4, 0);
  ASSERT_EQ(groups.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(groups[i].size(), 1u);
    EXPECT_EQ(groups[i][0].tensor, i);
    EXPECT_EQ(groups[i][0].numel, numels[i]);
  }
}

TEST(Plan, ExplicitGranularityKeepsTensorsWhole) {
  std::vector<uint64_t> numels(8, uint64_t(2) << 20);  // 8 tensors of 8 MiB
  auto groups = plan_fusion(numels, 4, 2);
  ASSERT_EQ(groups.size(), 2u);
  for (const auto& g : groups) {
    for (const auto& u : g) EXPECT_EQ(u.numel, numels[u.tensor]);
  }
  expect_cover(groups, numels);
}

TEST(Plan, EmptyListAndEmptyTensor) {
  EXPECT_TRUE(plan_fusion({}, 4, -1).empty());
  auto groups = plan_fusion({0, 5}, 4, -1);
  expect_cover(groups, {0, 5});
}

TEST(WirePolicy, MatchesThePythonEngine) {
  // DTYPE=0: fp16 everywhere, one level unless MODE=1
  auto p = wire_policy(0, -1, 10.f, 2, 2);
  EXPECT_FALSE(p.hierarchical);
  EXPECT_TRUE(p.intra_fp16 && p.inter_fp16);
  p = wire_policy(0, 1, 10.f, 2, 2);
  EXPECT_TRUE(p.hierarchical);
  EXPECT_TRUE(p.intra_fp16 && p.inter_fp16);
  // DTYPE=1: fp32 everywhere
  p = wire_policy(1, -1, 10.f, 2, 2);
  EXPECT_FALSE(p.hierarchical || p.intra_fp16 || p.inter_fp16);
  // DTYPE=2: two levels, fp32 inside, fp16 between nodes
  p = wire_policy(2, -1, 10.f, 2, 2);
  EXPECT_TRUE(p.hierarchical);
  EXPECT_FALSE(p.intra_fp16);
  EXPECT_TRUE(p.inter_fp16);
  // DTYPE=2 on one node: one level, all of it inside the node: fp32
  p = wire_policy(2, -1, 10.f, 1, 4);
  EXPECT_FALSE(p.hierarchical || p.intra_fp16 || p.inter_fp16);
  // DTYPE=2 with one rank per node: one level, all between nodes: fp16
  p = wire_policy(2, -1, 10.f, 4, 1);
  EXPECT_FALSE(p.hierarchical);
  EXPECT_TRUE(p.intra_fp16 && p.inter_fp16);
}
