// Exact scalar conversions between fp32 and fp16 / bf16 on bit patterns: the reference that every
// vectorised path must reproduce bit for bit (and that matches the x86 conversion instructions).
// The functions are static: each ISA-specific translation unit gets its own copy, so the linker can
// never hand the scalar path a copy compiled for AVX-512.
#pragma once

#include <cstdint>
#include <cstring>

namespace perseus {

static inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

static inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// fp32 -> fp16, round to nearest even, like vcvtps2ph with imm8 = 0 (MXCSR is not consulted).
static inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) {  // NaN: quiet it, keep the top 9 payload bits
    return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  }
  if (ax >= 0x477ff000u) {  // >= 65520 (halfway above the largest half, ties to even = up) or inf
    return static_cast<uint16_t>(sign | 0x7c00u);
  }
  if (ax >= 0x38800000u) {  // >= 2^-14: a normal half. Rebias the exponent by 127 - 15 = 112.
    const uint32_t odd = (ax >> 13) & 1u;
    return static_cast<uint16_t>(sign | ((ax - (112u << 23) + 0xfffu + odd) >> 13));
  }
  // A half subnormal (or zero): units of 2^-24. value = m * 2^(e - 150), result = m >> (126 - e).
  const uint32_t e = ax >> 23;
  if (e < 102) {  // < 2^-25: below half of the smallest subnormal (fp32 subnormals included)
    return static_cast<uint16_t>(sign);
  }
  const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - e;  // 14 .. 24
  uint32_t q = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) {
    ++q;  // may carry into the smallest normal 0x0400: that encoding is right
  }
  return static_cast<uint16_t>(sign | q);
}

// fp16 -> fp32, exact (like vcvtph2ps: a signalling NaN comes back quiet, payload kept).
static inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  if (e == 0x1f) {
    return bits_float(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u));
  }
  if (e != 0) {
    return bits_float(sign | ((e + 112u) << 23) | (m << 13));
  }
  if (m == 0) {
    return bits_float(sign);
  }
  // subnormal half: normalise; the value m * 2^-24 is a normal fp32
  const int lead = 31 - __builtin_clz(m);  // 0..9
  m = (m << (10 - lead)) & 0x3ffu;
  return bits_float(sign | (static_cast<uint32_t>(lead + 103) << 23) | (m << 13));
}

// fp32 -> bf16, round to nearest even, subnormals kept, NaN quietened (sign + top payload kept).
static inline uint16_t float_to_bf16_bits(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  }
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static inline float bf16_bits_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

// Smallest magnitudes whose conversion is infinite: anything at or above (or NaN) is non-finite.
constexpr uint32_t kHalfOverflowBits = 0x477ff000u;  // 65520.0f
constexpr uint32_t kBf16OverflowBits = 0x7f7f8000u;  // halfway between bf16 max and 2^128

}  // namespace perseus
