// AVX2 + F16C path (compiled with -mavx2 -mf16c -mfma -mpopcnt; selected only when cpuid has them).
// fp16 uses the vcvtps2ph / vcvtph2ps instructions; bf16 is rounded with integer operations.
#include <immintrin.h>

#include <cstdint>

#include "../half_bits.h"
#include "kernels.h"

namespace perseus {
namespace cpu {
namespace {

inline __m256 abs_ps(__m256 v) {
  return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
}

// Lanes that are inf/NaN or at least `threshold` in magnitude (NLT_UQ: not less than, or unordered).
inline uint64_t count_at_least(__m256 v, __m256 threshold) {
  return static_cast<uint64_t>(
      _mm_popcnt_u32(static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(abs_ps(v), threshold, _CMP_NLT_UQ)))));
}

// 8 fp32 -> 8 bf16 in the low 16 bits of each 32-bit lane. NaN lanes need the quieting blend; the
// caller knows from its non-finite count whether the block has any (NaN compares unordered).
inline __m256i round_bf16(__m256 v, bool may_have_nan) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i hi = _mm256_srli_epi32(x, 16);
  const __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb), 16);
  if (!may_have_nan) return rounded;
  const __m256i quiet_nan = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
  const __m256i is_nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  return _mm256_blendv_epi8(rounded, quiet_nan, is_nan);
}

inline void store16(uint16_t* dst, __m256i v, bool stream) {
  if (stream) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(dst), v);
  } else {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), v);
  }
}

inline void store8f(float* dst, __m256 v, bool stream) {
  if (stream) {
    _mm256_stream_ps(dst, v);
  } else {
    _mm256_storeu_ps(dst, v);
  }
}

// Streaming needs 32-byte aligned stores: the head up to that boundary goes through the scalar path.
template <typename T>
size_t stream_head(const T* dst, size_t n, size_t bytes_out, bool* stream) {
  const uintptr_t addr = reinterpret_cast<uintptr_t>(dst);
  *stream = bytes_out >= kStreamMinBytes && addr % sizeof(T) == 0;
  if (!*stream) return 0;
  const size_t head = ((32 - addr % 32) % 32) / sizeof(T);
  return head < n ? head : n;
}

uint64_t compress_f16(const float* src, uint16_t* dst, size_t n, float scale) {
  bool stream;
  size_t i = stream_head(dst, n, n * 2, &stream);
  uint64_t nonfinite = scalar_kernels().compress_f16(src, dst, i, scale);
  const __m256 vs = _mm256_set1_ps(scale);
  const __m256 threshold = _mm256_castsi256_ps(_mm256_set1_epi32(kHalfOverflowBits));
  for (; i + 16 <= n; i += 16) {
    const __m256 a = _mm256_mul_ps(_mm256_loadu_ps(src + i), vs);
    const __m256 b = _mm256_mul_ps(_mm256_loadu_ps(src + i + 8), vs);
    nonfinite += count_at_least(a, threshold) + count_at_least(b, threshold);
    const __m128i ha = _mm256_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT);
    const __m128i hb = _mm256_cvtps_ph(b, _MM_FROUND_TO_NEAREST_INT);
    store16(dst + i, _mm256_set_m128i(hb, ha), stream);
  }
  if (stream) _mm_sfence();
  return nonfinite + scalar_kernels().compress_f16(src + i, dst + i, n - i, scale);
}

uint64_t compress_bf16(const float* src, uint16_t* dst, size_t n, float scale) {
  bool stream;
  size_t i = stream_head(dst, n, n * 2, &stream);
  uint64_t nonfinite = scalar_kernels().compress_bf16(src, dst, i, scale);
  const __m256 vs = _mm256_set1_ps(scale);
  const __m256 threshold = _mm256_castsi256_ps(_mm256_set1_epi32(kBf16OverflowBits));
  for (; i + 16 <= n; i += 16) {
    const __m256 a = _mm256_mul_ps(_mm256_loadu_ps(src + i), vs);
    const __m256 b = _mm256_mul_ps(_mm256_loadu_ps(src + i + 8), vs);
    const uint64_t block_nonfinite = count_at_least(a, threshold) + count_at_least(b, threshold);
    nonfinite += block_nonfinite;
    // packus interleaves 128-bit lanes: [a0-3 b0-3 a4-7 b4-7] -> reorder the 64-bit quarters
    const __m256i packed = _mm256_packus_epi32(round_bf16(a, block_nonfinite != 0), round_bf16(b, block_nonfinite != 0));
    store16(dst + i, _mm256_permute4x64_epi64(packed, 0xd8), stream);
  }
  if (stream) _mm_sfence();
  return nonfinite + scalar_kernels().compress_bf16(src + i, dst + i, n - i, scale);
}

uint64_t decompress_f16(const uint16_t* src, float* dst, size_t n, float factor) {
  bool stream;
  size_t i = stream_head(dst, n, n * 4, &stream);
  uint64_t nonfinite = scalar_kernels().decompress_f16(src, dst, i, factor);
  const __m256 vf = _mm256_set1_ps(factor);
  const __m256 inf = _mm256_castsi256_ps(_mm256_set1_epi32(0x7f800000));
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256 a = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), vf);
    const __m256 b = _mm256_mul_ps(_mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)), vf);
    nonfinite += count_at_least(a, inf) + count_at_least(b, inf);
    store8f(dst + i, a, stream);
    store8f(dst + i + 8, b, stream);
  }
  if (stream) _mm_sfence();
  return nonfinite + scalar_kernels().decompress_f16(src + i, dst + i, n - i, factor);
}

uint64_t decompress_bf16(const uint16_t* src, float* dst, size_t n, float factor) {
  bool stream;
  size_t i = stream_head(dst, n, n * 4, &stream);
  uint64_t nonfinite = scalar_kernels().decompress_bf16(src, dst, i, factor);
  const __m256 vf = _mm256_set1_ps(factor);
  const __m256 inf = _mm256_castsi256_ps(_mm256_set1_epi32(0x7f800000));
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m256i lo = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_castsi256_si128(h)), 16);
    const __m256i hi = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm256_extracti128_si256(h, 1)), 16);
    const __m256 a = _mm256_mul_ps(_mm256_castsi256_ps(lo), vf);
    const __m256 b = _mm256_mul_ps(_mm256_castsi256_ps(hi), vf);
    nonfinite += count_at_least(a, inf) + count_at_least(b, inf);
    store8f(dst + i, a, stream);
    store8f(dst + i + 8, b, stream);
  }
  if (stream) _mm_sfence();
  return nonfinite + scalar_kernels().decompress_bf16(src + i, dst + i, n - i, factor);
}

const Kernels kAvx2{"avx2", compress_f16, compress_bf16, decompress_f16, decompress_bf16};

}  // namespace

const Kernels& avx2_kernels() { return kAvx2; }

}  // namespace cpu
}  // namespace perseus
