/* perseus/core.h: the C ABI of the AIACC-Training (Perseus) native core.
 *
 * Framework-agnostic: every binding (PyTorch, TensorFlow, MXNet) calls only these functions, so a
 * binding built with another compiler or C++ standard library can still link the static core.
 * Every function that can fail returns a perseus_status; perseus_last_error() then holds a message
 * (thread-local) that names the bad argument and the fix. Outputs are written only on success.
 *
 * Semantics (the reference for every CPU dispatch path and the CUDA kernels):
 *  - compress:   dst[i] = half(src[i] * scale), fp32 multiply then one round-to-nearest-even
 *                conversion (IEEE: overflow -> inf, NaN stays NaN, subnormals kept exactly as
 *                vcvtps2ph does). *nonfinite = number of dst elements that are inf or NaN.
 *  - decompress: dst[i] = float(src[i]) * f with f = (float)(1.0 / ((double)scale * world_size)),
 *                in place into the fp32 destination. *nonfinite = number of inf/NaN results
 *                (an fp16 sum of many ranks can overflow to inf).
 *  - bf16:       round-to-nearest-even on the upper 16 bits, subnormals kept (not flushed),
 *                NaN -> quiet NaN with the sign and the top payload bits of the input.
 *  - NaN payloads: CPU paths are bit-identical to each other; CUDA writes the canonical NaN.
 */
#ifndef PERSEUS_CORE_H
#define PERSEUS_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The static core keeps its symbols hidden inside each binding, so two bindings (of different
 * releases) in one process never bind to each other's copy. A shared build that must export them
 * (e.g. one loaded with ctypes) defines PERSEUS_CORE_EXPORT. */
#if defined(PERSEUS_CORE_EXPORT) && defined(__GNUC__)
#define PERSEUS_API __attribute__((visibility("default")))
#else
#define PERSEUS_API
#endif

#define PERSEUS_CORE_ABI_VERSION 1

typedef enum perseus_status {
  PERSEUS_OK = 0,
  PERSEUS_ERR_INVALID_ARGUMENT = 1, /* a bad value: see perseus_last_error() */
  PERSEUS_ERR_UNSUPPORTED = 2,      /* e.g. a dispatch path this CPU lacks, CUDA not built in */
  PERSEUS_ERR_CUDA = 3              /* a CUDA runtime error (message from cudaGetErrorString) */
} perseus_status;

typedef enum perseus_half_dtype {
  PERSEUS_FLOAT16 = 1,
  PERSEUS_BFLOAT16 = 2
} perseus_half_dtype;

/* Version of the core (the release it was built for) and the ABI version of this header. */
PERSEUS_API const char* perseus_core_version(void);
PERSEUS_API int perseus_core_abi_version(void);
PERSEUS_API const char* perseus_status_string(perseus_status status);
/* Message of the last failing call on this thread ("" if none). */
PERSEUS_API const char* perseus_last_error(void);

/* ---- CPU dispatch ------------------------------------------------------------------------
 * Paths: "scalar", "avx2" (AVX2+F16C+FMA), "avx512" (F+BW+VL+DQ, bf16 emulated with integer ops),
 * "avx512_bf16" (avx512 + the AVX512-BF16 conversion instruction). All give identical bits.
 * The path is chosen once from cpuid (the best the CPU supports) unless the environment variable
 * PERSEUS_CPU_DISPATCH names one, or perseus_set_dispatch() is called. */
PERSEUS_API const char* perseus_cpu_features(void);   /* e.g. "f16c fma avx2 avx512f ... avx512bf16" */
PERSEUS_API const char* perseus_dispatch_paths(void); /* paths this CPU can run, best last */
PERSEUS_API const char* perseus_dispatch_name(void);  /* path in use */
/* name: one of the paths above or "auto". Fails with PERSEUS_ERR_UNSUPPORTED when this CPU (or
 * this build) cannot run it, with PERSEUS_ERR_INVALID_ARGUMENT for an unknown name. */
PERSEUS_API perseus_status perseus_set_dispatch(const char* name);

/* ---- compression (CPU) ---------------------------------------------------------------------
 * scale: finite and > 0. world_size >= 1. src and dst must not overlap. */
PERSEUS_API perseus_status perseus_compress(const float* src, void* dst, perseus_half_dtype dtype,
                                            uint64_t n, float scale, uint64_t* nonfinite);
PERSEUS_API perseus_status perseus_decompress(const void* src, perseus_half_dtype dtype, float* dst,
                                              uint64_t n, float scale, int64_t world_size,
                                              uint64_t* nonfinite);
/* The factor decompress multiplies by: (float)(1.0 / ((double)scale * world_size)). */
PERSEUS_API perseus_status perseus_decompress_factor(float scale, int64_t world_size, float* factor);

/* ---- fusion planning -----------------------------------------------------------------------
 * Splits tensors (in the given order) into contiguous buckets; a pure function of the sizes, so
 * every rank computes the same plan.
 *   fusion 0       : no fusion, one bucket per tensor.
 *   fusion 1..128  : granularity g (PERSEUS_ALLREDUCE_FUSION): target = ceil(total / g) bytes; a
 *                    bucket is closed as soon as it holds >= target bytes, so there are at most g
 *                    buckets, each ~1/g of all gradients (a tensor is never split).
 *   fusion -1      : auto: g = clamp(ceil(total / PERSEUS_AUTO_BUCKET_BYTES), 1, 128).
 * bucket_of[i] receives the bucket index of tensor i (non-decreasing); *num_buckets the count.
 * An empty list gives 0 buckets. */
#define PERSEUS_AUTO_BUCKET_BYTES (32ull * 1024ull * 1024ull)
#define PERSEUS_FUSION_AUTO (-1)
#define PERSEUS_FUSION_MAX 128
PERSEUS_API perseus_status perseus_plan_buckets(const uint64_t* sizes_in_bytes, uint64_t count,
                                                int fusion, uint32_t* bucket_of,
                                                uint64_t* num_buckets);
/* Copies count buffers back to back into dst (pack) or out of src (unpack). */
PERSEUS_API perseus_status perseus_pack(const void* const* srcs, const uint64_t* nbytes,
                                        uint64_t count, void* dst);
PERSEUS_API perseus_status perseus_unpack(const void* src, void* const* dsts,
                                          const uint64_t* nbytes, uint64_t count);

/* ---- gossip downsampling (PERSEUS_DOWNSAMPLE_N_ELEMENTS = n, PERSEUS_GRADIENT_MOMENTUM = m) ----
 * At step s the offset is o = s mod n and the sent elements are i = o, o+n, o+2n, ... < numel:
 * count = numel > o ? (numel - o + n - 1) / n : 0.
 *   gather:          dst[j] = src[o + j*n]
 *   gather_momentum: for every i: a = src[i] + m * residual[i]   (two fp32 roundings, no FMA);
 *                    sent i: dst[j] = a, residual[i] = 0; others: residual[i] = a.
 *                    (error feedback: an element not sent keeps its gradient, decayed by m per
 *                    step, until its turn; m = 1 loses nothing, residual starts at 0)
 *   scatter:         dst[o + j*n] = src[j]; with zero_unsent the other elements of dst are set to 0
 *                    (their gradient is still in the residual), else they are left as they are.
 * elem_size: 2, 4 or 8 bytes. n >= 1. */
PERSEUS_API uint64_t perseus_downsample_count(uint64_t numel, uint64_t n, uint64_t step);
PERSEUS_API perseus_status perseus_downsample_gather(const void* src, void* dst, uint64_t elem_size,
                                                     uint64_t numel, uint64_t n, uint64_t step);
PERSEUS_API perseus_status perseus_downsample_gather_momentum(const float* src, float* residual,
                                                              float* dst, uint64_t numel,
                                                              uint64_t n, uint64_t step,
                                                              float momentum);
PERSEUS_API perseus_status perseus_downsample_scatter(const void* src, void* dst, uint64_t elem_size,
                                                      uint64_t numel, uint64_t n, uint64_t step,
                                                      int zero_unsent);

/* ---- CUDA (present when the core was built with a CUDA toolkit) -----------------------------
 * All calls are asynchronous on `stream` (a cudaStream_t; NULL = legacy default stream) and take
 * device pointers. nonfinite counters live in device memory and are ACCUMULATED into (atomicAdd):
 * zero them first. Without CUDA support every call returns PERSEUS_ERR_UNSUPPORTED. */
PERSEUS_API int perseus_has_cuda(void);
PERSEUS_API const char* perseus_cuda_architectures(void); /* e.g. "75-real 90", "" without CUDA */
PERSEUS_API perseus_status perseus_cuda_compress(const float* src, void* dst, perseus_half_dtype dtype,
                                                 uint64_t n, float scale,
                                                 unsigned long long* nonfinite, void* stream);
PERSEUS_API perseus_status perseus_cuda_decompress(const void* src, perseus_half_dtype dtype, float* dst,
                                                   uint64_t n, float scale, int64_t world_size,
                                                   unsigned long long* nonfinite, void* stream);
/* Batched copy in one launch per 64 buffers: pack (srcs -> dst back to back) / unpack. */
PERSEUS_API perseus_status perseus_cuda_pack(const void* const* srcs, const uint64_t* nbytes,
                                             uint64_t count, void* dst, void* stream);
PERSEUS_API perseus_status perseus_cuda_unpack(const void* src, void* const* dsts,
                                               const uint64_t* nbytes, uint64_t count, void* stream);
PERSEUS_API perseus_status perseus_cuda_downsample_gather(const void* src, void* dst, uint64_t elem_size,
                                                          uint64_t numel, uint64_t n, uint64_t step,
                                                          void* stream);
PERSEUS_API perseus_status perseus_cuda_downsample_gather_momentum(const float* src, float* residual,
                                                                   float* dst, uint64_t numel,
                                                                   uint64_t n, uint64_t step,
                                                                   float momentum, void* stream);
PERSEUS_API perseus_status perseus_cuda_downsample_scatter(const void* src, void* dst, uint64_t elem_size,
                                                           uint64_t numel, uint64_t n, uint64_t step,
                                                           int zero_unsent, void* stream);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PERSEUS_CORE_H */
