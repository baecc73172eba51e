// Fusion planning (PERSEUS_ALLREDUCE_FUSION) and pack/unpack.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "perseus/core.h"

namespace {

std::vector<uint32_t> plan(const std::vector<uint64_t>& sizes, int fusion, uint64_t* buckets) {
  std::vector<uint32_t> bucket_of(sizes.size(), 0xffffffffu);
  EXPECT_EQ(perseus_plan_buckets(sizes.data(), sizes.size(), fusion, bucket_of.data(), buckets), PERSEUS_OK)
      << perseus_last_error();
  return bucket_of;
}

std::vector<uint64_t> bucket_bytes(const std::vector<uint64_t>& sizes, const std::vector<uint32_t>& bucket_of,
                                   uint64_t buckets) {
  std::vector<uint64_t> bytes(buckets, 0);
  for (size_t i = 0; i < sizes.size(); ++i) bytes.at(bucket_of[i]) += sizes[i];
  return bytes;
}

std::vector<uint64_t> random_sizes(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> kind(0, 9);
  std::uniform_int_distribution<uint64_t> small(0, 4096), large(1 << 20, 64ull << 20);
  std::vector<uint64_t> sizes(count);
  for (auto& s : sizes) s = 4 * (kind(rng) < 7 ? small(rng) : large(rng) / 4);
  return sizes;
}

TEST(PlanBuckets, ZeroMeansOneBucketPerTensor) {
  const std::vector<uint64_t> sizes = {4, 400, 0, 4000000};
  uint64_t buckets = 0;
  const auto bucket_of = plan(sizes, 0, &buckets);
  EXPECT_EQ(buckets, 4u);
  EXPECT_EQ(bucket_of, (std::vector<uint32_t>{0, 1, 2, 3}));
}

TEST(PlanBuckets, GranularityGivesAtMostGContiguousBucketsOfAboutOneGth) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const std::vector<uint64_t> sizes = random_sizes(300, seed);
    const uint64_t total = std::accumulate(sizes.begin(), sizes.end(), uint64_t(0));
    for (int g : {1, 2, 3, 16, 64, 128}) {
      uint64_t buckets = 0;
      const auto bucket_of = plan(sizes, g, &buckets);
      ASSERT_GE(buckets, 1u);
      ASSERT_LE(buckets, static_cast<uint64_t>(g));
      EXPECT_EQ(bucket_of.front(), 0u);
      EXPECT_EQ(bucket_of.back(), buckets - 1);
      for (size_t i = 1; i < bucket_of.size(); ++i) {
        ASSERT_TRUE(bucket_of[i] == bucket_of[i - 1] || bucket_of[i] == bucket_of[i - 1] + 1) << "contiguous";
      }
      const uint64_t target = (total + g - 1) / g;
      const auto bytes = bucket_bytes(sizes, bucket_of, buckets);
      for (uint64_t b = 0; b + 1 < buckets; ++b) {
        EXPECT_GE(bytes[b], target) << "closed bucket " << b << " is at least 1/" << g;
        // and it was closed by its last tensor: without it the bucket was below target
        size_t last = 0;
        for (size_t i = 0; i < sizes.size(); ++i) if (bucket_of[i] == b) last = i;
        EXPECT_LT(bytes[b] - sizes[last], target);
      }
    }
  }
}

TEST(PlanBuckets, SixteenEqualTensorsAtGranularityFourGiveFourBuckets) {
  const std::vector<uint64_t> sizes(16, 1000);
  uint64_t buckets = 0;
  const auto bucket_of = plan(sizes, 4, &buckets);
  EXPECT_EQ(buckets, 4u);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(bucket_of[i], i / 4);
}

TEST(PlanBuckets, AutoUsesBucketsOfAbout32MiB) {
  // 100 tensors of 4 MiB = 400 MiB -> g = ceil(400 / 32) = 13 buckets of >= ceil(400/13) MiB
  const std::vector<uint64_t> sizes(100, 4ull << 20);
  uint64_t buckets = 0;
  plan(sizes, PERSEUS_FUSION_AUTO, &buckets);
  EXPECT_EQ(buckets, 13u);
  // a small model fits in one bucket
  const std::vector<uint64_t> small(50, 1024);
  plan(small, PERSEUS_FUSION_AUTO, &buckets);
  EXPECT_EQ(buckets, 1u);
  // a huge model is capped at 128 buckets
  const std::vector<uint64_t> huge(1000, 64ull << 20);
  plan(huge, PERSEUS_FUSION_AUTO, &buckets);
  EXPECT_LE(buckets, 128u);
  EXPECT_GE(buckets, 100u);
}

TEST(PlanBuckets, TrailingEmptyTensorsNeverOpenABucket) {
  const std::vector<uint64_t> sizes = {100, 100, 0, 0};
  uint64_t buckets = 0;
  const auto bucket_of = plan(sizes, 2, &buckets);
  EXPECT_EQ(buckets, 2u);
  EXPECT_EQ(bucket_of, (std::vector<uint32_t>{0, 1, 1, 1}));
  plan({}, 16, &buckets);
  EXPECT_EQ(buckets, 0u);
}

TEST(PlanBuckets, DeterministicPureFunctionOfSizes) {
  const std::vector<uint64_t> sizes = random_sizes(1000, 7);
  uint64_t b1 = 0, b2 = 0;
  EXPECT_EQ(plan(sizes, 16, &b1), plan(sizes, 16, &b2));
  EXPECT_EQ(b1, b2);
}

TEST(PlanBuckets, BadGranularityIsRefusedWithTheRange) {
  const std::vector<uint64_t> sizes = {4, 4};
  std::vector<uint32_t> bucket_of = {7, 7};
  uint64_t buckets = 99;
  for (int bad : {129, -2, 1000}) {
    EXPECT_EQ(perseus_plan_buckets(sizes.data(), 2, bad, bucket_of.data(), &buckets), PERSEUS_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(perseus_last_error()).find("0 (no fusion) .. 128"), std::string::npos);
  }
  EXPECT_EQ(bucket_of, (std::vector<uint32_t>{7, 7})) << "nothing written on failure";
  EXPECT_EQ(buckets, 99u);
}

TEST(Pack, RoundTripsBuffersBackToBack) {
  std::vector<std::vector<float>> tensors = {{1, 2, 3}, {}, {4}, {5, 6, 7, 8, 9}};
  std::vector<const void*> srcs;
  std::vector<void*> dsts;
  std::vector<uint64_t> nbytes;
  for (auto& t : tensors) {
    srcs.push_back(t.data());
    nbytes.push_back(t.size() * sizeof(float));
  }
  std::vector<float> flat(9, 0.0f);
  ASSERT_EQ(perseus_pack(srcs.data(), nbytes.data(), tensors.size(), flat.data()), PERSEUS_OK);
  EXPECT_EQ(flat, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  for (auto& f : flat) f *= 2;
  std::vector<std::vector<float>> back = {{0, 0, 0}, {}, {0}, {0, 0, 0, 0, 0}};
  for (auto& t : back) dsts.push_back(t.data());
  ASSERT_EQ(perseus_unpack(flat.data(), dsts.data(), nbytes.data(), back.size()), PERSEUS_OK);
  EXPECT_EQ(back[0], (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(back[3], (std::vector<float>{10, 12, 14, 16, 18}));
}

TEST(Pack, NullBufferFailsBeforeWritingAnything) {
  const float a[2] = {1, 2};
  const void* srcs[2] = {a, nullptr};
  const uint64_t nbytes[2] = {8, 4};
  float flat[3] = {-1, -1, -1};
  EXPECT_EQ(perseus_pack(srcs, nbytes, 2, flat), PERSEUS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(flat[0], -1.0f);
}

}  // namespace
