// AVX-512 (F, BW, VL, DQ) kernels, shared by the "avx512" path (bf16 rounded with integer
// operations) and the "avx512_bf16" path (vcvtneps2bf16). Included by exactly one translation unit
// per path, each compiled with that path's -m flags; NativeBf16 selects the bf16 rounding.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "../half_bits.h"
#include "kernels.h"

namespace perseus {
namespace cpu {
namespace {

constexpr size_t kLanes = 16;

inline __mmask16 tail_mask(size_t left) {
  return left >= kLanes ? __mmask16(0xffff) : __mmask16((1u << left) - 1u);
}

inline uint64_t count_at_least(__m512 v, __m512 threshold, __mmask16 lanes) {
  const __mmask16 hit = _mm512_mask_cmp_ps_mask(lanes, _mm512_abs_ps(v), threshold, _CMP_NLT_UQ);
  return static_cast<uint64_t>(_mm_popcnt_u32(hit));
}

// 16 fp32 -> 16 bf16, exact round-to-nearest-even with subnormals kept and NaN quietened.
inline __m256i round_bf16_emulated(__m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i hi = _mm512_srli_epi32(x, 16);
  const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  r = _mm512_mask_or_epi32(r, nan, hi, _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(r);
}

template <bool NativeBf16>
inline __m256i round_bf16(__m512 v) {
#if defined(__AVX512BF16__)
  if (NativeBf16) {
    // vcvtneps2bf16 rounds to nearest even and quietens NaN exactly like the emulation, but it
    // flushes fp32 subnormal inputs to zero: those lanes (exponent 0) take the emulated result.
    __m256i r = (__m256i)_mm512_cvtneps_pbh(v);
    const __mmask16 tiny = _mm512_testn_epi32_mask(_mm512_castps_si512(v), _mm512_set1_epi32(0x7f800000));
    if (tiny) {
      r = _mm256_mask_mov_epi16(r, tiny, round_bf16_emulated(v));
    }
    return r;
  }
#endif
  return round_bf16_emulated(v);
}

// Streaming needs 64-byte aligned stores: the head up to that boundary goes through a masked block.
template <typename T>
size_t stream_head(const T* dst, size_t n, size_t bytes_out, bool* stream) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(dst);
  *stream = bytes_out >= kStreamMinBytes && addr % sizeof(T) == 0;
  if (!*stream) return 0;
  const size_t head = ((64 - addr % 64) % 64) / sizeof(T);
  return head < n ? head : n;
}

// Compress [i, i + 16) (or its masked part); returns the non-finite count of those lanes.
template <bool Bf16, bool NativeBf16>
inline uint64_t compress_block(const float* src, __m512 vs, __m512 threshold, __mmask16 lanes,
                               __m256i* out) {
  const __m512 a = _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes, src), vs);
  *out = Bf16 ? round_bf16<NativeBf16>(a) : _mm512_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT);
  return count_at_least(a, threshold, lanes);
}

template <bool Bf16, bool NativeBf16>
uint64_t compress(const float* src, uint16_t* dst, size_t n, float scale) {
  const __m512 vs = _mm512_set1_ps(scale);
  const __m512 threshold = _mm512_castsi512_ps(_mm512_set1_epi32(Bf16 ? kBf16OverflowBits : kHalfOverflowBits));
  uint64_t nonfinite = 0;
  bool stream;
  size_t i = 0;
  size_t head = stream_head(dst, n, n * 2, &stream);
  __m256i h;
  while (i < head) {  // < 32 elements: at most two masked blocks
    const __mmask16 lanes = tail_mask(head - i);
    nonfinite += compress_block<Bf16, NativeBf16>(src + i, vs, threshold, lanes, &h);
    _mm256_mask_storeu_epi16(dst + i, lanes, h);
    i += head - i < kLanes ? head - i : kLanes;
  }
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    __m256i h1;
    nonfinite += compress_block<Bf16, NativeBf16>(src + i, vs, threshold, 0xffff, &h);
    nonfinite += compress_block<Bf16, NativeBf16>(src + i + kLanes, vs, threshold, 0xffff, &h1);
    const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(h), h1, 1);
    if (stream) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), both);
    } else {
      _mm512_storeu_si512(dst + i, both);
    }
  }
  if (stream) _mm_sfence();
  while (i < n) {
    const __mmask16 lanes = tail_mask(n - i);
    nonfinite += compress_block<Bf16, NativeBf16>(src + i, vs, threshold, lanes, &h);
    _mm256_mask_storeu_epi16(dst + i, lanes, h);
    i += n - i < kLanes ? n - i : kLanes;
  }
  return nonfinite;
}

template <bool Bf16>
inline __m512 widen(__m256i h) {
  if (Bf16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  return _mm512_cvtph_ps(h);
}

template <bool Bf16>
uint64_t decompress(const uint16_t* src, float* dst, size_t n, float factor) {
  const __m512 vf = _mm512_set1_ps(factor);
  const __m512 inf = _mm512_castsi512_ps(_mm512_set1_epi32(0x7f800000));
  uint64_t nonfinite = 0;
  bool stream;
  size_t i = 0;
  const size_t head = stream_head(dst, n, n * 4, &stream);
  auto masked = [&](size_t left) {
    const __mmask16 lanes = tail_mask(left);
    const __m512 a = _mm512_mul_ps(widen<Bf16>(_mm256_maskz_loadu_epi16(lanes, src + i)), vf);
    nonfinite += count_at_least(a, inf, lanes);
    _mm512_mask_storeu_ps(dst + i, lanes, a);
    i += left < kLanes ? left : kLanes;
  };
  while (i < head) masked(head - i);
  for (; i + 2 * kLanes <= n; i += 2 * kLanes) {
    const __m512i h = _mm512_loadu_si512(src + i);
    const __m512 a = _mm512_mul_ps(widen<Bf16>(_mm512_castsi512_si256(h)), vf);
    const __m512 b = _mm512_mul_ps(widen<Bf16>(_mm512_extracti64x4_epi64(h, 1)), vf);
    nonfinite += count_at_least(a, inf, 0xffff) + count_at_least(b, inf, 0xffff);
    if (stream) {
      _mm512_stream_ps(dst + i, a);
      _mm512_stream_ps(dst + i + kLanes, b);
    } else {
      _mm512_storeu_ps(dst + i, a);
      _mm512_storeu_ps(dst + i + kLanes, b);
    }
  }
  if (stream) _mm_sfence();
  while (i < n) masked(n - i);
  return nonfinite;
}

}  // namespace
}  // namespace cpu
}  // namespace perseus
