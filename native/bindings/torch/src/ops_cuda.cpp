// CUDA kernels of the perseus ops: the core's kernels launched on torch's current stream of the
// tensors' device. Non-finite counts stay on the device (no synchronisation).
#include <ATen/core/Tensor.h>
#if __has_include(<ATen/ops/zeros.h>)
#include <ATen/ops/zeros.h>
#else  // torch < 1.12 has no per-operator headers
#include <ATen/Functions.h>
#endif
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include "registration.h"

#include "common.h"
#include "perseus/core.h"

namespace perseus_torch {
namespace {

void* current_stream(const at::Tensor& t) {
  return static_cast<void*>(c10::cuda::getCurrentCUDAStream(t.device().index()).stream());
}

at::Tensor device_counter(const at::Tensor& like) {
  return at::zeros({}, like.options().dtype(at::kLong));
}

unsigned long long* counter_ptr(at::Tensor& counter) {
  return reinterpret_cast<unsigned long long*>(static_cast<int64_t*>(counter.data_ptr()));
}

at::Tensor compress_cuda(const at::Tensor& src, at::Tensor& dst, double scale) {
  const perseus_half_dtype dtype = check_compress(src, dst, "compress");
  const c10::cuda::CUDAGuard guard(src.device());
  at::Tensor counter = device_counter(src);
  check_status(perseus_cuda_compress(float_data(src), dst.data_ptr(), dtype, static_cast<uint64_t>(src.numel()),
                                     static_cast<float>(scale), counter_ptr(counter), current_stream(src)),
               "compress");
  return counter;
}

at::Tensor decompress_cuda(const at::Tensor& src, at::Tensor& dst, double scale, int64_t world_size) {
  const perseus_half_dtype dtype = check_decompress(src, dst, "decompress");
  const c10::cuda::CUDAGuard guard(src.device());
  at::Tensor counter = device_counter(src);
  check_status(perseus_cuda_decompress(src.data_ptr(), dtype, float_data(dst), static_cast<uint64_t>(src.numel()),
                                       static_cast<float>(scale), world_size, counter_ptr(counter), current_stream(src)),
               "decompress");
  return counter;
}

void pack_cuda(at::TensorList tensors, at::Tensor& flat) {
  const PackPlan plan = check_pack(tensors, flat, "pack");
  const c10::cuda::CUDAGuard guard(flat.device());
  check_status(perseus_cuda_pack(plan.srcs.data(), plan.nbytes.data(), plan.nbytes.size(), flat.data_ptr(),
                                 current_stream(flat)),
               "pack");
}

void unpack_cuda(const at::Tensor& flat, at::TensorList tensors) {
  const PackPlan plan = check_pack(tensors, flat, "unpack");
  const c10::cuda::CUDAGuard guard(flat.device());
  check_status(perseus_cuda_unpack(flat.data_ptr(), plan.dsts.data(), plan.nbytes.data(), plan.nbytes.size(),
                                   current_stream(flat)),
               "unpack");
}

void downsample_gather_cuda(const at::Tensor& src, at::Tensor& dst, int64_t n, int64_t step) {
  check_gather(src, dst, n, step, "downsample_gather");
  const c10::cuda::CUDAGuard guard(src.device());
  check_status(perseus_cuda_downsample_gather(src.data_ptr(), dst.data_ptr(), src.element_size(),
                                              static_cast<uint64_t>(src.numel()), n, static_cast<uint64_t>(step),
                                              current_stream(src)),
               "downsample_gather");
}

void downsample_gather_momentum_cuda(const at::Tensor& src, at::Tensor& residual, at::Tensor& dst, int64_t n,
                                     int64_t step, double momentum) {
  const char* op = "downsample_gather_momentum";
  check_float32(src, op, "src");
  check_float32(residual, op, "residual");
  check_same_device(src, residual, op);
  check_same_numel(src, residual, op);
  check_contiguous(residual, op, "residual");
  check_no_overlap(residual, dst, op);
  check_no_overlap(residual, src, op);
  check_gather(src, dst, n, step, op);
  const c10::cuda::CUDAGuard guard(src.device());
  check_status(perseus_cuda_downsample_gather_momentum(float_data(src), float_data(residual),
                                                       float_data(dst), static_cast<uint64_t>(src.numel()), n,
                                                       static_cast<uint64_t>(step), static_cast<float>(momentum),
                                                       current_stream(src)),
               op);
}

void downsample_scatter_cuda(const at::Tensor& src, at::Tensor& dst, int64_t n, int64_t step, bool zero_unsent) {
  check_gather(dst, src, n, step, "downsample_scatter");
  const c10::cuda::CUDAGuard guard(dst.device());
  check_status(perseus_cuda_downsample_scatter(src.data_ptr(), dst.data_ptr(), dst.element_size(),
                                               static_cast<uint64_t>(dst.numel()), n, static_cast<uint64_t>(step),
                                               zero_unsent ? 1 : 0, current_stream(dst)),
               "downsample_scatter");
}

}  // namespace
}  // namespace perseus_torch

#if PERSEUS_TORCH_LIBRARY
TORCH_LIBRARY_IMPL(perseus, CUDA, m) {
  using namespace perseus_torch;
  m.impl("compress", PERSEUS_IMPL(compress_cuda));
  m.impl("decompress", PERSEUS_IMPL(decompress_cuda));
  m.impl("pack", PERSEUS_IMPL(pack_cuda));
  m.impl("unpack", PERSEUS_IMPL(unpack_cuda));
  m.impl("downsample_gather", PERSEUS_IMPL(downsample_gather_cuda));
  m.impl("downsample_gather_momentum", PERSEUS_IMPL(downsample_gather_momentum_cuda));
  m.impl("downsample_scatter", PERSEUS_IMPL(downsample_scatter_cuda));
}
#else
namespace perseus_torch {
namespace {
auto cuda_registry = c10::RegisterOperators()
    .PERSEUS_KERNEL(kCompress, compress_cuda, cuda_key())
    .PERSEUS_KERNEL(kDecompress, decompress_cuda, cuda_key())
    .PERSEUS_KERNEL(kPack, pack_cuda, cuda_key())
    .PERSEUS_KERNEL(kUnpack, unpack_cuda, cuda_key())
    .PERSEUS_KERNEL(kDownsampleGather, downsample_gather_cuda, cuda_key())
    .PERSEUS_KERNEL(kDownsampleGatherMomentum, downsample_gather_momentum_cuda, cuda_key())
    .PERSEUS_KERNEL(kDownsampleScatter, downsample_scatter_cuda, cuda_key());
}  // namespace
}  // namespace perseus_torch
#endif
