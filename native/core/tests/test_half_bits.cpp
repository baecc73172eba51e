// The scalar conversions (the definition every path reproduces) against independent references:
// exact rounding computed in double, the x86 conversion instructions, and gcc's _Float16.
#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>

#include "half_bits.h"
#include "test_util.h"

namespace perseus {
namespace {

// Every stride-th fp32 pattern plus the edges; with AIACC_OPTIN=1 every optin_stride-th (1: all
// 2^32 patterns, used against the hardware instructions; the slow exact references use 17).
template <typename Fn>
void for_patterns(uint64_t stride, uint64_t optin_stride, Fn fn) {
  const uint64_t step = test::optin() ? optin_stride : stride;
  for (uint64_t x = 0; x <= 0xffffffffull; x += step) fn(static_cast<uint32_t>(x));
  for (uint32_t x : test::edge_bits()) fn(x);
}

TEST(HalfBits, MatchesExactRoundingReference) {
  uint64_t checked = 0;
  for_patterns(4099, 17, [&](uint32_t x) {
    const float f = bits_float(x);
    ASSERT_EQ(float_to_half_bits(f), test::reference_half(f)) << std::hex << "fp32 bits 0x" << x;
    ++checked;
  });
  EXPECT_GT(checked, 1000000u);
}

TEST(HalfBits, Bf16MatchesExactRoundingReference) {
  for_patterns(4099, 17, [&](uint32_t x) {
    const float f = bits_float(x);
    ASSERT_EQ(float_to_bf16_bits(f), test::reference_bf16(f)) << std::hex << "fp32 bits 0x" << x;
  });
}

TEST(HalfBits, HalfToFloatExhaustiveAgainstDecode) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = half_bits_to_float(static_cast<uint16_t>(h));
    if (((h >> 10) & 0x1f) == 0x1f && (h & 0x3ff)) {
      EXPECT_TRUE(std::isnan(f));
      EXPECT_EQ(float_bits(f), ((h & 0x8000u) << 16) | 0x7fc00000u | ((h & 0x3ffu) << 13)) << h;
      continue;
    }
    const double expected = (h & 0x8000u ? -1.0 : 1.0) *
                            ((((h >> 10) & 0x1f) == 0x1f) ? INFINITY : test::decode_half(static_cast<uint16_t>(h & 0x7fff)));
    EXPECT_EQ(static_cast<double>(f), expected) << h;
    EXPECT_EQ(float_bits(f) >> 31, h >> 15) << "sign of " << h;
    // round trip
    EXPECT_EQ(float_to_half_bits(f), h);
  }
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) uint16_t hw_half(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float hw_widen(uint16_t h) { return _cvtsh_ss(h); }

TEST(HalfBits, MatchesF16CInstructionsBitForBit) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "CPU without F16C";
  for_patterns(257, 1, [&](uint32_t x) {
    const float f = bits_float(x);
    ASSERT_EQ(float_to_half_bits(f), hw_half(f)) << std::hex << "fp32 bits 0x" << x;
  });
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    ASSERT_EQ(float_bits(half_bits_to_float(static_cast<uint16_t>(h))), float_bits(hw_widen(static_cast<uint16_t>(h))))
        << h;
  }
}

#if defined(__GNUC__) && __GNUC__ >= 10 || defined(__clang__)
__attribute__((target("avx512bf16,avx512f,avx512vl"))) uint16_t hw_bf16(float f) {
  const __m128bh r = _mm_cvtneps_pbh(_mm_set1_ps(f));
  return static_cast<uint16_t>(_mm_extract_epi16((__m128i)r, 0));
}

TEST(HalfBits, Bf16MatchesAvx512Bf16InstructionOutsideSubnormals) {
  if (!__builtin_cpu_supports("avx512bf16")) GTEST_SKIP() << "CPU without AVX512-BF16";
  for_patterns(257, 1, [&](uint32_t x) {
    if ((x & 0x7f800000u) == 0 && (x & 0x7fffffu) != 0) {  // the instruction flushes fp32 subnormals
      ASSERT_EQ(hw_bf16(bits_float(x)), (x >> 16) & 0x8000u);
      return;
    }
    ASSERT_EQ(float_to_bf16_bits(bits_float(x)), hw_bf16(bits_float(x))) << std::hex << "fp32 bits 0x" << x;
  });
}
#endif
#endif

#if defined(__FLT16_MAX__)
TEST(HalfBits, MatchesCompilerFloat16Casts) {
  for_patterns(4099, 17, [&](uint32_t x) {
    const float f = bits_float(x);
    const _Float16 h = static_cast<_Float16>(f);
    uint16_t hb;
    std::memcpy(&hb, &h, sizeof hb);
    if (std::isnan(f)) {
      ASSERT_EQ(hb & 0x7c00u, 0x7c00u);
      ASSERT_NE(hb & 0x3ffu, 0u);
      return;
    }
    ASSERT_EQ(float_to_half_bits(f), hb) << std::hex << "fp32 bits 0x" << x;
  });
}
#endif

}  // namespace
}  // namespace perseus
