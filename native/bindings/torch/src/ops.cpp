// The perseus op library: schemas of torch.ops.perseus.* (documented in OPS.md) and the ops that
// take no tensors. Device kernels are registered by ops_cpu.cpp and ops_cuda.cpp.
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "common.h"
#include "perseus/core.h"
#include "registration.h"

namespace perseus_torch {
namespace {

std::vector<std::vector<int64_t>> plan_buckets(const std::vector<int64_t>& sizes, c10::optional<int64_t> fusion) {
  std::vector<uint64_t> bytes;
  bytes.reserve(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    TORCH_CHECK_VALUE(sizes[i] >= 0, "perseus.plan_buckets: size ", i, " is ", sizes[i], " bytes; sizes are >= 0");
    bytes.push_back(static_cast<uint64_t>(sizes[i]));
  }
  const int64_t g = fusion.has_value() ? *fusion : PERSEUS_FUSION_AUTO;
  TORCH_CHECK_VALUE(!fusion.has_value() || (g >= 0 && g <= PERSEUS_FUSION_MAX), "perseus.plan_buckets: fusion ", g,
                    " must be 0 (no fusion) .. 128 (PERSEUS_ALLREDUCE_FUSION), or None for auto");
  std::vector<uint32_t> bucket_of(bytes.size());
  uint64_t buckets = 0;
  check_status(perseus_plan_buckets(bytes.data(), bytes.size(), static_cast<int>(g), bucket_of.data(), &buckets),
               "plan_buckets");
  std::vector<std::vector<int64_t>> plan(buckets);
  for (size_t i = 0; i < bucket_of.size(); ++i) plan[bucket_of[i]].push_back(static_cast<int64_t>(i));
  return plan;
}

int64_t downsample_count(int64_t numel, int64_t n, int64_t step) {
  TORCH_CHECK_VALUE(numel >= 0, "perseus.downsample_count: numel ", numel, " must be >= 0");
  const uint64_t un = check_downsample_n(n, step, "downsample_count");
  return static_cast<int64_t>(perseus_downsample_count(static_cast<uint64_t>(numel), un, static_cast<uint64_t>(step)));
}

std::string cpu_features() { return perseus_cpu_features(); }
std::string dispatch() { return perseus_dispatch_name(); }
std::string dispatch_paths() { return perseus_dispatch_paths(); }

std::string set_dispatch(const std::string& name) {
  check_status(perseus_set_dispatch(name.c_str()), "set_dispatch");
  return perseus_dispatch_name();
}

std::string core_version() { return perseus_core_version(); }
bool has_cuda() { return perseus_has_cuda() != 0; }

}  // namespace
}  // namespace perseus_torch

#if PERSEUS_TORCH_LIBRARY
TORCH_LIBRARY(perseus, m) {
  using namespace perseus_torch;
  // tensor ops: kernels per device in ops_cpu.cpp / ops_cuda.cpp
  m.def(schema::kCompress);
  m.def(schema::kDecompress);
  m.def(schema::kPack);
  m.def(schema::kUnpack);
  m.def(schema::kDownsampleGather);
  m.def(schema::kDownsampleGatherMomentum);
  m.def(schema::kDownsampleScatter);
  // no tensors: one kernel for every device
  m.def("plan_buckets(int[] sizes, int? fusion) -> int[][]", &plan_buckets);
  m.def("downsample_count(int numel, int n, int step) -> int", &downsample_count);
  m.def("cpu_features() -> str", &cpu_features);
  m.def("dispatch() -> str", &dispatch);
  m.def("dispatch_paths() -> str", &dispatch_paths);
  m.def("set_dispatch(str name) -> str", &set_dispatch);
  m.def("build_manifest() -> str", &build_manifest);
  m.def("core_version() -> str", &core_version);
  m.def("has_cuda() -> bool", &has_cuda);
}
#else
// tensor ops: schema and kernel together, per device, in ops_cpu.cpp / ops_cuda.cpp
static auto perseus_registry = c10::RegisterOperators()
    .op("perseus::plan_buckets(int[] sizes, int? fusion) -> int[][]", &perseus_torch::plan_buckets)
    .op("perseus::downsample_count(int numel, int n, int step) -> int", &perseus_torch::downsample_count)
    .op("perseus::cpu_features() -> str", &perseus_torch::cpu_features)
    .op("perseus::dispatch() -> str", &perseus_torch::dispatch)
    .op("perseus::dispatch_paths() -> str", &perseus_torch::dispatch_paths)
    .op("perseus::set_dispatch(str name) -> str", &perseus_torch::set_dispatch)
    .op("perseus::build_manifest() -> str", &perseus_torch::build_manifest)
    .op("perseus::core_version() -> str", &perseus_torch::core_version)
    .op("perseus::has_cuda() -> bool", &perseus_torch::has_cuda);
#endif
