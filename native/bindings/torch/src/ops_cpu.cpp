// CPU kernels of the perseus ops: the core's dispatched kernels, split over torch's intra-op threads
// (at::parallel_for; one thread under torch.set_num_threads(1)).
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#if __has_include(<ATen/ops/scalar_tensor.h>)
#include <ATen/ops/scalar_tensor.h>
#else  // torch < 1.12 has no per-operator headers
#include <ATen/Functions.h>
#endif
#include "registration.h"

#include <atomic>

#include "common.h"
#include "perseus/core.h"

namespace perseus_torch {
namespace {

// torch <= 1.5 leaves the choice of parallel backend (AT_PARALLEL_OPENMP, ...) to its CMake targets, which this
// build does not use: there the kernels run on the calling thread.
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
#if AT_PARALLEL_OPENMP || AT_PARALLEL_NATIVE || AT_PARALLEL_NATIVE_TBB
  at::parallel_for(begin, end, grain, f);
#else
  (void)grain;
  if (begin < end) f(begin, end);
#endif
}

// Chunks this large keep the core's streaming stores (>= 4 MB of output) in every chunk.
constexpr int64_t kGrain = int64_t(1) << 22;

at::Tensor count_tensor(uint64_t count) {
  return at::scalar_tensor(static_cast<int64_t>(count), at::TensorOptions().dtype(at::kLong));
}

at::Tensor compress_cpu(const at::Tensor& src, at::Tensor& dst, double scale) {
  const perseus_half_dtype dtype = check_compress(src, dst, "compress");
  const auto fscale = static_cast<float>(scale);
  // validates scale and the dispatch choice once, before any thread starts
  check_status(perseus_compress(nullptr, nullptr, dtype, 0, fscale, nullptr), "compress");
  const float* in = float_data(src);
  auto* out = static_cast<uint16_t*>(dst.data_ptr());
  std::atomic<uint64_t> total{0};
  parallel_for(0, src.numel(), kGrain, [&](int64_t begin, int64_t end) {
    uint64_t count = 0;
    perseus_compress(in + begin, out + begin, dtype, static_cast<uint64_t>(end - begin), fscale, &count);
    total += count;
  });
  return count_tensor(total.load());
}

at::Tensor decompress_cpu(const at::Tensor& src, at::Tensor& dst, double scale, int64_t world_size) {
  const perseus_half_dtype dtype = check_decompress(src, dst, "decompress");
  const auto fscale = static_cast<float>(scale);
  check_status(perseus_decompress(nullptr, dtype, nullptr, 0, fscale, world_size, nullptr), "decompress");
  const auto* in = static_cast<const uint16_t*>(src.data_ptr());
  float* out = float_data(dst);
  std::atomic<uint64_t> total{0};
  parallel_for(0, src.numel(), kGrain, [&](int64_t begin, int64_t end) {
    uint64_t count = 0;
    perseus_decompress(in + begin, dtype, out + begin, static_cast<uint64_t>(end - begin), fscale, world_size, &count);
    total += count;
  });
  return count_tensor(total.load());
}

void pack_cpu(at::TensorList tensors, at::Tensor& flat) {
  const PackPlan plan = check_pack(tensors, flat, "pack");
  check_status(perseus_pack(plan.srcs.data(), plan.nbytes.data(), plan.nbytes.size(), flat.data_ptr()), "pack");
}

void unpack_cpu(const at::Tensor& flat, at::TensorList tensors) {
  const PackPlan plan = check_pack(tensors, flat, "unpack");
  check_status(perseus_unpack(flat.data_ptr(), plan.dsts.data(), plan.nbytes.data(), plan.nbytes.size()), "unpack");
}

void downsample_gather_cpu(const at::Tensor& src, at::Tensor& dst, int64_t n, int64_t step) {
  check_gather(src, dst, n, step, "downsample_gather");
  check_status(perseus_downsample_gather(src.data_ptr(), dst.data_ptr(), src.element_size(),
                                         static_cast<uint64_t>(src.numel()), n, static_cast<uint64_t>(step)),
               "downsample_gather");
}

void downsample_gather_momentum_cpu(const at::Tensor& src, at::Tensor& residual, at::Tensor& dst, int64_t n,
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
  check_status(perseus_downsample_gather_momentum(float_data(src), float_data(residual),
                                                  float_data(dst), static_cast<uint64_t>(src.numel()), n,
                                                  static_cast<uint64_t>(step), static_cast<float>(momentum)),
               op);
}

void downsample_scatter_cpu(const at::Tensor& src, at::Tensor& dst, int64_t n, int64_t step, bool zero_unsent) {
  check_gather(dst, src, n, step, "downsample_scatter");
  check_status(perseus_downsample_scatter(src.data_ptr(), dst.data_ptr(), dst.element_size(),
                                          static_cast<uint64_t>(dst.numel()), n, static_cast<uint64_t>(step),
                                          zero_unsent ? 1 : 0),
               "downsample_scatter");
}

}  // namespace
}  // namespace perseus_torch

#if PERSEUS_TORCH_LIBRARY
TORCH_LIBRARY_IMPL(perseus, CPU, m) {
  using namespace perseus_torch;
  m.impl("compress", PERSEUS_IMPL(compress_cpu));
  m.impl("decompress", PERSEUS_IMPL(decompress_cpu));
  m.impl("pack", PERSEUS_IMPL(pack_cpu));
  m.impl("unpack", PERSEUS_IMPL(unpack_cpu));
  m.impl("downsample_gather", PERSEUS_IMPL(downsample_gather_cpu));
  m.impl("downsample_gather_momentum", PERSEUS_IMPL(downsample_gather_momentum_cpu));
  m.impl("downsample_scatter", PERSEUS_IMPL(downsample_scatter_cpu));
}
#else
namespace perseus_torch {
namespace {
auto cpu_registry = c10::RegisterOperators()
    .PERSEUS_KERNEL(kCompress, compress_cpu, cpu_key())
    .PERSEUS_KERNEL(kDecompress, decompress_cpu, cpu_key())
    .PERSEUS_KERNEL(kPack, pack_cpu, cpu_key())
    .PERSEUS_KERNEL(kUnpack, unpack_cpu, cpu_key())
    .PERSEUS_KERNEL(kDownsampleGather, downsample_gather_cpu, cpu_key())
    .PERSEUS_KERNEL(kDownsampleGatherMomentum, downsample_gather_momentum_cpu, cpu_key())
    .PERSEUS_KERNEL(kDownsampleScatter, downsample_scatter_cpu, cpu_key());
}  // namespace
}  // namespace perseus_torch
#endif
