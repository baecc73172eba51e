// Every CPU dispatch path gives the scalar path's bits and counts, on random and edge inputs, at
// every tail length, misaligned, and above the streaming-store threshold.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "half_bits.h"
#include "perseus/core.h"
#include "test_util.h"

namespace perseus {
namespace {

struct Output {
  std::vector<uint16_t> half;
  uint64_t nonfinite = 0;
};

Output compress_with(const std::string& path, const float* src, size_t n, perseus_half_dtype dtype, float scale,
                     size_t dst_offset) {
  EXPECT_EQ(perseus_set_dispatch(path.c_str()), PERSEUS_OK) << perseus_last_error();
  std::vector<uint16_t> buffer(n + dst_offset + 1, 0xabcd);
  Output out;
  EXPECT_EQ(perseus_compress(src, buffer.data() + dst_offset, dtype, n, scale, &out.nonfinite), PERSEUS_OK)
      << perseus_last_error();
  EXPECT_EQ(buffer.back(), 0xabcd) << "wrote past the end";
  for (size_t i = 0; i < dst_offset; ++i) EXPECT_EQ(buffer[i], 0xabcd) << "wrote before the start";
  out.half.assign(buffer.begin() + dst_offset, buffer.begin() + dst_offset + n);
  return out;
}

uint64_t count_nonfinite(const std::vector<uint16_t>& half, perseus_half_dtype dtype) {
  const uint16_t mask = dtype == PERSEUS_FLOAT16 ? 0x7c00 : 0x7f80;
  uint64_t count = 0;
  for (uint16_t h : half) count += (h & mask) == mask;
  return count;
}

class DispatchTest : public ::testing::TestWithParam<perseus_half_dtype> {
 protected:
  void TearDown() override { perseus_set_dispatch("auto"); }
};

TEST_P(DispatchTest, CompressIdenticalToScalarAtEverySizeAndAlignment) {
  const perseus_half_dtype dtype = GetParam();
  const std::vector<float> data = test::random_floats(4096 + 8, 10.0f, 42);
  for (const std::string& path : test::supported_paths()) {
    for (size_t src_offset = 0; src_offset < 3; ++src_offset) {
      for (size_t n = 0; n <= 300; ++n) {
        const Output ref = compress_with("scalar", data.data() + src_offset, n, dtype, 10.0f, src_offset);
        const Output got = compress_with(path, data.data() + src_offset, n, dtype, 10.0f, src_offset);
        ASSERT_EQ(got.half, ref.half) << path << " n=" << n << " offset=" << src_offset;
        ASSERT_EQ(got.nonfinite, ref.nonfinite) << path << " n=" << n;
        ASSERT_EQ(ref.nonfinite, count_nonfinite(ref.half, dtype));
      }
    }
  }
}

TEST_P(DispatchTest, CompressIdenticalToScalarForManyScalesAndStreamingSizes) {
  const perseus_half_dtype dtype = GetParam();
  const float scales[] = {1.0f, 10.0f, 0.5f, 1024.0f, 3.3e-5f, 7.0f, 65504.0f, 1e30f};
  // 3M + 5 elements: 6 MB of output, above the streaming threshold, with an unaligned tail
  const size_t n_big = 3 * 1024 * 1024 + 5;
  for (float scale : scales) {
    const std::vector<float> data = test::random_floats(n_big + 1, scale, static_cast<uint64_t>(scale * 1000));
    for (size_t dst_offset : {size_t(0), size_t(1), size_t(7)}) {
      const Output ref = compress_with("scalar", data.data() + 1, n_big, dtype, scale, dst_offset);
      EXPECT_EQ(ref.nonfinite, count_nonfinite(ref.half, dtype));
      for (const std::string& path : test::supported_paths()) {
        const Output got = compress_with(path, data.data() + 1, n_big, dtype, scale, dst_offset);
        ASSERT_EQ(got.nonfinite, ref.nonfinite) << path << " scale=" << scale;
        ASSERT_TRUE(got.half == ref.half) << path << " scale=" << scale << " dst_offset=" << dst_offset;
      }
    }
  }
}

TEST_P(DispatchTest, CompressEdgeValuesMatchReferenceOnEveryPath) {
  const perseus_half_dtype dtype = GetParam();
  std::vector<float> edges;
  for (uint32_t b : test::edge_bits()) edges.push_back(bits_float(b));
  for (const std::string& path : test::supported_paths()) {
    const Output got = compress_with(path, edges.data(), edges.size(), dtype, 1.0f, 0);
    for (size_t i = 0; i < edges.size(); ++i) {
      const uint16_t want = dtype == PERSEUS_FLOAT16 ? test::reference_half(edges[i]) : test::reference_bf16(edges[i]);
      ASSERT_EQ(got.half[i], want) << path << std::hex << " input bits 0x" << float_bits(edges[i]);
    }
  }
}

TEST_P(DispatchTest, OverflowAfterScalingIsInfinityAndCounted) {
  const perseus_half_dtype dtype = GetParam();
  // finite inputs that only overflow once scaled by 10
  // bf16: 3.4e38 is a finite fp32 product that rounds to bf16 infinity; 1e39 overflows fp32 itself
  const float big = dtype == PERSEUS_FLOAT16 ? 7000.0f : 3.4e37f;
  const float huge = dtype == PERSEUS_FLOAT16 ? 1e30f : 1e38f;
  std::vector<float> data(100, 1.0f);
  data[3] = big;
  data[50] = -huge;
  data[77] = std::nanf("");
  data[99] = -INFINITY;
  for (const std::string& path : test::supported_paths()) {
    const Output got = compress_with(path, data.data(), data.size(), dtype, 10.0f, 0);
    EXPECT_EQ(got.nonfinite, 4u) << path;
    const uint16_t inf = dtype == PERSEUS_FLOAT16 ? 0x7c00 : 0x7f80;
    EXPECT_EQ(got.half[3], inf) << path;
    EXPECT_EQ(got.half[50], inf | 0x8000) << path;
    EXPECT_EQ(got.half[99], inf | 0x8000) << path;
    EXPECT_EQ(got.half[77] & inf, inf) << path;
    EXPECT_NE(got.half[77] & ~inf & 0x7fff, 0) << path << ": NaN must stay NaN";
  }
}

struct Widened {
  std::vector<float> values;
  uint64_t nonfinite = 0;
};

Widened decompress_with(const std::string& path, const std::vector<uint16_t>& src, size_t offset,
                        perseus_half_dtype dtype, float scale, int64_t world) {
  EXPECT_EQ(perseus_set_dispatch(path.c_str()), PERSEUS_OK) << perseus_last_error();
  const size_t n = src.size() - offset;
  std::vector<float> buffer(n + offset + 1, -1.5f);
  Widened out;
  EXPECT_EQ(perseus_decompress(src.data() + offset, dtype, buffer.data() + offset, n, scale, world, &out.nonfinite),
            PERSEUS_OK)
      << perseus_last_error();
  EXPECT_EQ(buffer.back(), -1.5f) << "wrote past the end";
  out.values.assign(buffer.begin() + offset, buffer.begin() + offset + n);
  return out;
}

std::vector<uint32_t> as_bits(const std::vector<float>& values) {
  std::vector<uint32_t> bits(values.size());
  std::memcpy(bits.data(), values.data(), values.size() * sizeof(float));
  return bits;
}

TEST_P(DispatchTest, DecompressAllPatternsIdenticalToScalarAndToDefinition) {
  const perseus_half_dtype dtype = GetParam();
  // every 16-bit pattern, repeated so that the big (streaming) loop sees them too
  std::vector<uint16_t> src;
  for (int rep = 0; rep < 40; ++rep) {
    for (uint32_t h = 0; h <= 0xffff; ++h) src.push_back(static_cast<uint16_t>(h * 40503u + rep));
  }
  const struct {
    float scale;
    int64_t world;
  } cases[] = {{10.0f, 1}, {10.0f, 8}, {1.0f, 3}, {0.25f, 1}, {1e-30f, 1}, {1024.0f, 128}};
  for (const auto& c : cases) {
    float factor = 0.0f;
    ASSERT_EQ(perseus_decompress_factor(c.scale, c.world, &factor), PERSEUS_OK);
    EXPECT_EQ(factor, static_cast<float>(1.0 / (static_cast<double>(c.scale) * c.world)));
    for (size_t offset : {size_t(0), size_t(3)}) {
      const Widened ref = decompress_with("scalar", src, offset, dtype, c.scale, c.world);
      uint64_t expected_nonfinite = 0;
      for (size_t i = 0; i < ref.values.size(); ++i) {
        const uint16_t h = src[offset + i];
        const float widened = dtype == PERSEUS_FLOAT16 ? half_bits_to_float(h) : bf16_bits_to_float(h);
        const float want = widened * factor;
        expected_nonfinite += !std::isfinite(want);
        if (std::isnan(want)) {
          ASSERT_TRUE(std::isnan(ref.values[i]));
        } else {
          ASSERT_EQ(float_bits(ref.values[i]), float_bits(want)) << "pattern " << h;
        }
      }
      EXPECT_EQ(ref.nonfinite, expected_nonfinite);
      for (const std::string& path : test::supported_paths()) {
        const Widened got = decompress_with(path, src, offset, dtype, c.scale, c.world);
        ASSERT_EQ(got.nonfinite, ref.nonfinite) << path;
        ASSERT_TRUE(as_bits(got.values) == as_bits(ref.values)) << path << " scale=" << c.scale;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, DispatchTest, ::testing::Values(PERSEUS_FLOAT16, PERSEUS_BFLOAT16),
                         [](const ::testing::TestParamInfo<perseus_half_dtype>& info) {
                           return std::string(info.param == PERSEUS_FLOAT16 ? "fp16" : "bf16");
                         });

TEST(Dispatch, BestPathIsChosenByDefaultAndPathsAreListed) {
  ASSERT_EQ(perseus_set_dispatch("auto"), PERSEUS_OK);
  const std::vector<std::string> paths = test::supported_paths();
  ASSERT_FALSE(paths.empty());
  EXPECT_EQ(paths.front(), "scalar");
  EXPECT_EQ(std::string(perseus_dispatch_name()), paths.back());
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw")) {
    EXPECT_EQ(paths.back(), "avx512_bf16");
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) {
    EXPECT_NE(paths.back(), "scalar");
  }
#endif
}

TEST(Dispatch, UnknownOrUnsupportedPathIsRefusedAndKeepsTheCurrentOne) {
  ASSERT_EQ(perseus_set_dispatch("scalar"), PERSEUS_OK);
  EXPECT_EQ(perseus_set_dispatch("avx9"), PERSEUS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(perseus_last_error()).find("unknown dispatch path"), std::string::npos);
  EXPECT_NE(std::string(perseus_last_error()).find("avx2"), std::string::npos) << "lists the known paths";
  EXPECT_EQ(std::string(perseus_dispatch_name()), "scalar");
  perseus_set_dispatch("auto");
}

}  // namespace
}  // namespace perseus
