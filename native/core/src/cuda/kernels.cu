// CUDA kernels of the core: the same operations as the CPU paths (semantics in perseus/core.h).
// fp32 arithmetic uses __fmul_rn / __fadd_rn so that nvcc never contracts it into an FMA.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cub/block/block_reduce.cuh>
#include <string>
#include <vector>

#include "../status.h"
#include "../validate.h"
#include "perseus/core.h"

namespace perseus {
namespace gpu {
namespace {

constexpr int kThreads = 256;
constexpr uint64_t kMaxBlocks = 8192;  // grid-stride beyond this: enough to fill any current GPU

uint64_t blocks_for(uint64_t work_items) {
  const uint64_t blocks = (work_items + kThreads - 1) / kThreads;
  return blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks);
}

perseus_status launched(const char* op) {
  const cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return ok();
  return fail(PERSEUS_ERR_CUDA, std::string(op) + ": kernel launch failed: " + cudaGetErrorString(err));
}

template <bool Bf16>
__device__ __forceinline__ uint16_t round_to_16(float v) {
  // through __nv_bfloat16_raw: CUDA 11.8 declares __bfloat16_as_ushort for sm_80+ only
  if (Bf16) return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(v)).x;
  return __half_as_ushort(__float2half_rn(v));
}

template <bool Bf16>
__device__ __forceinline__ float widen_16(uint16_t h) {
  if (Bf16) return __uint_as_float(static_cast<uint32_t>(h) << 16);
  return __half2float(__ushort_as_half(h));
}

template <bool Bf16>
__device__ __forceinline__ unsigned nonfinite_16(uint16_t h) {
  const uint16_t exp_mask = Bf16 ? 0x7f80u : 0x7c00u;
  return (h & exp_mask) == exp_mask;
}

__device__ __forceinline__ unsigned nonfinite_32(float f) {
  return (__float_as_uint(f) & 0x7f800000u) == 0x7f800000u;
}

// One atomicAdd per block with the block's total.
__device__ __forceinline__ void add_count(unsigned count, unsigned long long* counter) {
  using Reduce = cub::BlockReduce<unsigned, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  const unsigned total = Reduce(storage).Sum(count);
  if (threadIdx.x == 0 && total != 0 && counter != nullptr) atomicAdd(counter, static_cast<unsigned long long>(total));
}

template <bool Bf16>
__global__ void compress_kernel(const float* __restrict__ src, uint16_t* __restrict__ dst, uint64_t n,
                                float scale, bool vectorised, unsigned long long* nonfinite) {
  unsigned count = 0;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t n4 = vectorised ? n / 4 : 0;
  for (uint64_t k = first; k < n4; k += stride) {
    const float4 v = reinterpret_cast<const float4*>(src)[k];
    ushort4 h;
    h.x = round_to_16<Bf16>(__fmul_rn(v.x, scale));
    h.y = round_to_16<Bf16>(__fmul_rn(v.y, scale));
    h.z = round_to_16<Bf16>(__fmul_rn(v.z, scale));
    h.w = round_to_16<Bf16>(__fmul_rn(v.w, scale));
    count += nonfinite_16<Bf16>(h.x) + nonfinite_16<Bf16>(h.y) + nonfinite_16<Bf16>(h.z) + nonfinite_16<Bf16>(h.w);
    reinterpret_cast<ushort4*>(dst)[k] = h;
  }
  for (uint64_t i = n4 * 4 + first; i < n; i += stride) {
    const uint16_t h = round_to_16<Bf16>(__fmul_rn(src[i], scale));
    count += nonfinite_16<Bf16>(h);
    dst[i] = h;
  }
  add_count(count, nonfinite);
}

template <bool Bf16>
__global__ void decompress_kernel(const uint16_t* __restrict__ src, float* __restrict__ dst, uint64_t n,
                                  float factor, bool vectorised, unsigned long long* nonfinite) {
  unsigned count = 0;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t n4 = vectorised ? n / 4 : 0;
  for (uint64_t k = first; k < n4; k += stride) {
    const ushort4 h = reinterpret_cast<const ushort4*>(src)[k];
    float4 v;
    v.x = __fmul_rn(widen_16<Bf16>(h.x), factor);
    v.y = __fmul_rn(widen_16<Bf16>(h.y), factor);
    v.z = __fmul_rn(widen_16<Bf16>(h.z), factor);
    v.w = __fmul_rn(widen_16<Bf16>(h.w), factor);
    count += nonfinite_32(v.x) + nonfinite_32(v.y) + nonfinite_32(v.z) + nonfinite_32(v.w);
    reinterpret_cast<float4*>(dst)[k] = v;
  }
  for (uint64_t i = n4 * 4 + first; i < n; i += stride) {
    const float v = __fmul_rn(widen_16<Bf16>(src[i]), factor);
    count += nonfinite_32(v);
    dst[i] = v;
  }
  add_count(count, nonfinite);
}

template <typename T>
__global__ void gather_kernel(const T* __restrict__ src, T* __restrict__ dst, uint64_t count, uint64_t n,
                              uint64_t offset) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t j = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < count; j += stride) {
    dst[j] = src[offset + j * n];
  }
}

template <typename T>
__global__ void scatter_kernel(const T* __restrict__ src, T* __restrict__ dst, uint64_t numel, uint64_t n,
                               uint64_t offset, bool zero_unsent) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel; i += stride) {
    const bool sent = i >= offset && (i - offset) % n == 0;
    if (sent) {
      dst[i] = src[(i - offset) / n];
    } else if (zero_unsent) {
      dst[i] = T(0);
    }
  }
}

__global__ void gather_momentum_kernel(const float* __restrict__ src, float* __restrict__ residual,
                                       float* __restrict__ dst, uint64_t numel, uint64_t n, uint64_t offset,
                                       float momentum) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel; i += stride) {
    const float acc = __fadd_rn(src[i], __fmul_rn(momentum, residual[i]));
    if (i >= offset && (i - offset) % n == 0) {
      dst[(i - offset) / n] = acc;
      residual[i] = 0.0f;
    } else {
      residual[i] = acc;
    }
  }
}

// Up to kBatch buffers per launch, passed by value (kernel parameters, no host->device table copy).
constexpr int kBatch = 64;
struct CopyBatch {
  const unsigned char* src[kBatch];
  unsigned char* dst[kBatch];
  uint64_t bytes[kBatch];
};

// blockIdx.y picks the buffer; the x blocks share it. 16-byte moves where all three allow it.
__global__ void batched_copy_kernel(CopyBatch batch) {
  const int b = blockIdx.y;
  const unsigned char* src = batch.src[b];
  unsigned char* dst = batch.dst[b];
  const uint64_t bytes = batch.bytes[b];
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool wide = (reinterpret_cast<uintptr_t>(src) % 16 == 0) && (reinterpret_cast<uintptr_t>(dst) % 16 == 0);
  const uint64_t n16 = wide ? bytes / 16 : 0;
  for (uint64_t k = first; k < n16; k += stride) {
    reinterpret_cast<uint4*>(dst)[k] = reinterpret_cast<const uint4*>(src)[k];
  }
  for (uint64_t i = n16 * 16 + first; i < bytes; i += stride) dst[i] = src[i];
}

perseus_status batched_copy(const unsigned char* const* srcs, unsigned char* const* dsts,
                            const uint64_t* nbytes, uint64_t count, cudaStream_t stream, const char* op) {
  CopyBatch batch{};
  int used = 0;
  uint64_t largest = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (nbytes[i] != 0) {
      batch.src[used] = srcs[i];
      batch.dst[used] = dsts[i];
      batch.bytes[used] = nbytes[i];
      largest = nbytes[i] > largest ? nbytes[i] : largest;
      ++used;
    }
    if (used == kBatch || (i + 1 == count && used > 0)) {
      const dim3 grid(static_cast<unsigned>(blocks_for((largest + 15) / 16)), static_cast<unsigned>(used));
      batched_copy_kernel<<<grid, kThreads, 0, stream>>>(batch);
      if (perseus_status s = launched(op)) return s;
      used = 0;
      largest = 0;
    }
  }
  return ok();
}

template <typename T>
void launch_gather(const void* src, void* dst, uint64_t count, uint64_t n, uint64_t offset, cudaStream_t stream) {
  gather_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<const T*>(src), static_cast<T*>(dst),
                                                               count, n, offset);
}

template <typename T>
void launch_scatter(const void* src, void* dst, uint64_t numel, uint64_t n, uint64_t offset, bool zero,
                    cudaStream_t stream) {
  scatter_kernel<T><<<blocks_for(numel), kThreads, 0, stream>>>(static_cast<const T*>(src), static_cast<T*>(dst),
                                                                numel, n, offset, zero);
}

bool aligned(const void* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

}  // namespace
}  // namespace gpu
}  // namespace perseus

extern "C" {

int perseus_has_cuda(void) { return 1; }

const char* perseus_cuda_architectures(void) { return PERSEUS_CUDA_ARCHITECTURES_STRING; }

perseus_status perseus_cuda_compress(const float* src, void* dst, perseus_half_dtype dtype, uint64_t n,
                                     float scale, unsigned long long* nonfinite, void* stream) {
  using namespace perseus;
  using namespace perseus::gpu;
  if (perseus_status s = check_dtype(dtype)) return s;
  if (perseus_status s = check_scale(scale)) return s;
  if (perseus_status s = check_pointers(src, dst, n, "cuda compress")) return s;
  if (n == 0) return ok();
  const bool vec = aligned(src, 16) && aligned(dst, 8);
  const auto s = static_cast<cudaStream_t>(stream);
  const unsigned blocks = static_cast<unsigned>(blocks_for(vec ? (n + 3) / 4 : n));
  auto* out = static_cast<uint16_t*>(dst);
  if (dtype == PERSEUS_FLOAT16) {
    compress_kernel<false><<<blocks, kThreads, 0, s>>>(src, out, n, scale, vec, nonfinite);
  } else {
    compress_kernel<true><<<blocks, kThreads, 0, s>>>(src, out, n, scale, vec, nonfinite);
  }
  return launched("cuda compress");
}

perseus_status perseus_cuda_decompress(const void* src, perseus_half_dtype dtype, float* dst, uint64_t n,
                                       float scale, int64_t world_size, unsigned long long* nonfinite,
                                       void* stream) {
  using namespace perseus;
  using namespace perseus::gpu;
  if (perseus_status s = check_dtype(dtype)) return s;
  float factor = 0.0f;
  if (perseus_status s = decompress_factor(scale, world_size, &factor)) return s;
  if (perseus_status s = check_pointers(src, dst, n, "cuda decompress")) return s;
  if (n == 0) return ok();
  const bool vec = aligned(src, 8) && aligned(dst, 16);
  const auto s = static_cast<cudaStream_t>(stream);
  const unsigned blocks = static_cast<unsigned>(blocks_for(vec ? (n + 3) / 4 : n));
  const auto* in = static_cast<const uint16_t*>(src);
  if (dtype == PERSEUS_FLOAT16) {
    decompress_kernel<false><<<blocks, kThreads, 0, s>>>(in, dst, n, factor, vec, nonfinite);
  } else {
    decompress_kernel<true><<<blocks, kThreads, 0, s>>>(in, dst, n, factor, vec, nonfinite);
  }
  return launched("cuda decompress");
}

perseus_status perseus_cuda_pack(const void* const* srcs, const uint64_t* nbytes, uint64_t count, void* dst,
                                 void* stream) {
  using namespace perseus;
  if (count > 0 && (srcs == nullptr || nbytes == nullptr || dst == nullptr)) {
    return fail(PERSEUS_ERR_INVALID_ARGUMENT, "cuda pack: null buffer list, sizes or destination");
  }
  std::vector<const unsigned char*> from(count);
  std::vector<unsigned char*> to(count);
  auto* out = static_cast<unsigned char*>(dst);
  for (uint64_t i = 0; i < count; ++i) {
    if (nbytes[i] != 0 && srcs[i] == nullptr) {
      return fail(PERSEUS_ERR_INVALID_ARGUMENT, "cuda pack: buffer " + std::to_string(i) + " is null");
    }
    from[i] = static_cast<const unsigned char*>(srcs[i]);
    to[i] = out;
    out += nbytes[i];
  }
  return gpu::batched_copy(from.data(), to.data(), nbytes, count, static_cast<cudaStream_t>(stream), "cuda pack");
}

perseus_status perseus_cuda_unpack(const void* src, void* const* dsts, const uint64_t* nbytes, uint64_t count,
                                   void* stream) {
  using namespace perseus;
  if (count > 0 && (dsts == nullptr || nbytes == nullptr || src == nullptr)) {
    return fail(PERSEUS_ERR_INVALID_ARGUMENT, "cuda unpack: null buffer list, sizes or source");
  }
  std::vector<const unsigned char*> from(count);
  std::vector<unsigned char*> to(count);
  const auto* in = static_cast<const unsigned char*>(src);
  for (uint64_t i = 0; i < count; ++i) {
    if (nbytes[i] != 0 && dsts[i] == nullptr) {
      return fail(PERSEUS_ERR_INVALID_ARGUMENT, "cuda unpack: buffer " + std::to_string(i) + " is null");
    }
    from[i] = in;
    to[i] = static_cast<unsigned char*>(dsts[i]);
    in += nbytes[i];
  }
  return gpu::batched_copy(from.data(), to.data(), nbytes, count, static_cast<cudaStream_t>(stream), "cuda unpack");
}

perseus_status perseus_cuda_downsample_gather(const void* src, void* dst, uint64_t elem_size, uint64_t numel,
                                              uint64_t n, uint64_t step, void* stream) {
  using namespace perseus;
  if (perseus_status s = check_downsample(n, elem_size, true)) return s;
  if (perseus_status s = check_pointers(src, dst, numel, "cuda downsample_gather")) return s;
  const uint64_t count = perseus_downsample_count(numel, n, step);
  if (count == 0) return ok();
  const auto s = static_cast<cudaStream_t>(stream);
  const uint64_t offset = step % n;
  switch (elem_size) {
    case 2: gpu::launch_gather<uint16_t>(src, dst, count, n, offset, s); break;
    case 4: gpu::launch_gather<uint32_t>(src, dst, count, n, offset, s); break;
    default: gpu::launch_gather<unsigned long long>(src, dst, count, n, offset, s); break;
  }
  return gpu::launched("cuda downsample_gather");
}

perseus_status perseus_cuda_downsample_scatter(const void* src, void* dst, uint64_t elem_size, uint64_t numel,
                                               uint64_t n, uint64_t step, int zero_unsent, void* stream) {
  using namespace perseus;
  if (perseus_status s = check_downsample(n, elem_size, true)) return s;
  if (perseus_status s = check_pointers(src, dst, numel, "cuda downsample_scatter")) return s;
  if (numel == 0) return ok();
  const auto s = static_cast<cudaStream_t>(stream);
  const uint64_t offset = step % n;
  const bool zero = zero_unsent != 0;
  switch (elem_size) {
    case 2: gpu::launch_scatter<uint16_t>(src, dst, numel, n, offset, zero, s); break;
    case 4: gpu::launch_scatter<uint32_t>(src, dst, numel, n, offset, zero, s); break;
    default: gpu::launch_scatter<unsigned long long>(src, dst, numel, n, offset, zero, s); break;
  }
  return gpu::launched("cuda downsample_scatter");
}

perseus_status perseus_cuda_downsample_gather_momentum(const float* src, float* residual, float* dst,
                                                       uint64_t numel, uint64_t n, uint64_t step, float momentum,
                                                       void* stream) {
  using namespace perseus;
  if (perseus_status s = check_downsample(n, 4, false)) return s;
  if (perseus_status s = check_pointers(src, residual, numel, "cuda downsample_gather_momentum")) return s;
  if (perseus_status s = check_pointers(src, dst, numel, "cuda downsample_gather_momentum")) return s;
  if (!std::isfinite(momentum)) {
    return fail(PERSEUS_ERR_INVALID_ARGUMENT, "gradient momentum " + std::to_string(momentum) +
                                                  ": must be finite (PERSEUS_GRADIENT_MOMENTUM, default 1)");
  }
  if (numel == 0) return ok();
  gpu::gather_momentum_kernel<<<gpu::blocks_for(numel), gpu::kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      src, residual, dst, numel, n, step % n, momentum);
  return gpu::launched("cuda downsample_gather_momentum");
}

}  // extern "C"
