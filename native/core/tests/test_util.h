// Inputs shared by the core tests: edge values of fp32 <-> fp16/bf16 conversion and random data.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "half_bits.h"
#include "perseus/core.h"

namespace perseus {
namespace test {

inline std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  for (char c : text) {
    if (c == ' ') {
      if (!word.empty()) words.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) words.push_back(word);
  return words;
}

inline std::vector<std::string> supported_paths() { return split_words(perseus_dispatch_paths()); }

inline bool optin() {
  const char* v = std::getenv("AIACC_OPTIN");
  return v != nullptr && std::string(v) == "1";
}

// Bit patterns around every place where the conversions change behaviour.
inline std::vector<uint32_t> edge_bits() {
  std::vector<uint32_t> centres = {
      0x00000000u, 0x00000001u, 0x00000002u, 0x007fffffu, 0x00800000u, 0x00800001u,  // fp32 subnormals
      0x33000000u, 0x33000001u, 0x33800000u, 0x33c00000u, 0x34000000u,  // 2^-25, 2^-24, ... (half subnormal)
      0x387fc000u, 0x387fe000u, 0x387ff000u, 0x38800000u,              // largest half subnormal, 2^-14
      0x3f800000u, 0x3f801000u, 0x3f802000u, 0x3f803000u, 0x3f808000u, 0x3f818000u,  // fp16 / bf16 ties
      0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477ff001u, 0x47800000u,  // 65504, 65520 (overflow), 65536
      0x7f7f7fffu, 0x7f7f8000u, 0x7f7fffffu, 0x7f800000u,               // bf16 max, its overflow tie, inf
      0x7f800001u, 0x7fa00000u, 0x7fbfffffu, 0x7fc00000u, 0x7fc12345u, 0x7fffffffu,  // sNaN, qNaN payloads
      0x00400000u, 0x00008000u, 0x00018000u, 0x0000ffffu,               // fp32 subnormals with bf16 ties
  };
  std::vector<uint32_t> out;
  for (uint32_t c : centres) {
    for (int64_t d = -3; d <= 3; ++d) {
      const int64_t v = static_cast<int64_t>(c) + d;
      if (v < 0 || v > 0x7fffffff) continue;
      out.push_back(static_cast<uint32_t>(v));
      out.push_back(static_cast<uint32_t>(v) | 0x80000000u);
    }
  }
  return out;
}

// Random fp32 data: uniform bit patterns (every class), gradients of many magnitudes, and values
// that land near the fp16 overflow threshold after multiplying by `scale`.
inline std::vector<float> random_floats(size_t n, float scale, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint32_t> any_bits;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-45, 40);
  std::uniform_int_distribution<int> kind(0, 9);
  const std::vector<uint32_t> edges = edge_bits();
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    switch (kind(rng)) {
      case 0:
      case 1:
        out[i] = bits_float(any_bits(rng));
        break;
      case 2:
        out[i] = bits_float(edges[any_bits(rng) % edges.size()]);
        break;
      case 3:  // just around 65520 / scale
        out[i] = 65520.0f / scale * (1.0f + normal(rng) * 1e-3f);
        break;
      default:
        out[i] = normal(rng) * std::pow(10.0f, static_cast<float>(exponent(rng)) / 4.0f);
        break;
    }
  }
  return out;
}

// Exact round-to-nearest-even of an fp32 value onto a grid given by (bits -> value), searched on
// the two neighbours of the truncated pattern; `inf_value` is what the pattern after the largest
// finite one is worth for rounding (2^16 for fp16, 2^128 for bf16: IEEE's unbounded exponent).
inline uint16_t reference_round(double value, uint16_t truncated, double (*decode)(uint16_t),
                                uint16_t inf_bits, double inf_value) {
  const double lo = decode(truncated);
  const uint16_t up = static_cast<uint16_t>(truncated + 1);
  const double hi = up == inf_bits ? inf_value : decode(up);
  const double dlo = value - lo, dhi = hi - value;
  if (dlo < dhi) return truncated;
  if (dhi < dlo) return up;
  return (truncated & 1u) ? up : truncated;
}

inline double decode_half(uint16_t h) {
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  if (e == 0) return std::ldexp(static_cast<double>(m), -24);
  return std::ldexp(1.0 + m / 1024.0, e - 15);
}

inline double decode_bf16(uint16_t h) { return static_cast<double>(bits_float(static_cast<uint32_t>(h) << 16)); }

// fp32 -> fp16 from the definition of rounding (independent of the bit tricks under test).
inline uint16_t reference_half(float f) {
  const uint32_t x = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const double a = std::fabs(static_cast<double>(f));
  if (std::isnan(f)) return static_cast<uint16_t>(sign | 0x7e00u | ((x >> 13) & 0x3ffu));
  if (a >= 65536.0) return sign | 0x7c00u;
  // largest pattern whose value is <= a
  uint16_t t = 0;
  for (int bit = 14; bit >= 0; --bit) {
    const uint16_t cand = static_cast<uint16_t>(t | (1u << bit));
    if (cand <= 0x7bffu && decode_half(cand) <= a) t = cand;
  }
  if (decode_half(t) == a) return sign | t;
  return sign | reference_round(a, t, decode_half, 0x7c00u, 65536.0);
}

// fp32 -> bf16 from the definition of rounding; subnormals kept.
inline uint16_t reference_bf16(float f) {
  const uint32_t x = float_bits(f);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint16_t t = static_cast<uint16_t>((x & 0x7fffffffu) >> 16);
  const double a = std::fabs(static_cast<double>(f));
  if (std::isinf(f) || decode_bf16(t) == a) return sign | t;
  return sign | reference_round(a, t, decode_bf16, 0x7f80u, std::ldexp(1.0, 128));
}

}  // namespace test
}  // namespace perseus
