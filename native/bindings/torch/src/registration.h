// Operator registration on every torch the binding builds for: TORCH_LIBRARY / TORCH_LIBRARY_IMPL
// (torch/library.h, torch >= 1.6) or, before that, c10::RegisterOperators (torch 1.2-1.5). The schemas
// are written once, here, for both.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#if __has_include(<torch/library.h>)
#include <torch/library.h>
#define PERSEUS_TORCH_LIBRARY 1
#else
#include <ATen/core/op_registration/op_registration.h>
#define PERSEUS_TORCH_LIBRARY 0
#endif

namespace perseus_torch {
namespace schema {

constexpr const char* kCompress = "compress(Tensor src, Tensor(a!) dst, float scale) -> Tensor";
constexpr const char* kDecompress = "decompress(Tensor src, Tensor(a!) dst, float scale, int world_size) -> Tensor";
constexpr const char* kPack = "pack(Tensor[] tensors, Tensor(a!) flat) -> ()";
constexpr const char* kUnpack = "unpack(Tensor flat, Tensor(a!)[] tensors) -> ()";
constexpr const char* kDownsampleGather = "downsample_gather(Tensor src, Tensor(a!) dst, int n, int step) -> ()";
constexpr const char* kDownsampleGatherMomentum =
    "downsample_gather_momentum(Tensor src, Tensor(a!) residual, Tensor(b!) dst, int n, int step, float momentum) -> ()";
constexpr const char* kDownsampleScatter =
    "downsample_scatter(Tensor src, Tensor(a!) dst, int n, int step, bool zero_unsent=True) -> ()";

}  // namespace schema

// torch <= 1.6 boxes only kernels whose tensors come by value and tensor lists as std::vector: OldKernel adapts
// a kernel written for newer torch (const Tensor&, Tensor& for outputs, TensorList). Tensors share storage,
// so in-place writes through a copy reach the caller.
template <class T> struct OldArg { using type = T; };
template <> struct OldArg<const at::Tensor&> { using type = at::Tensor; };
template <> struct OldArg<at::Tensor&> { using type = at::Tensor; };
template <> struct OldArg<at::TensorList> { using type = std::vector<at::Tensor>; };

template <class Signature, Signature* Kernel> struct OldKernel;
template <class R, class... Args, R (*Kernel)(Args...)> struct OldKernel<R(Args...), Kernel> {
  static R call(typename OldArg<Args>::type... args) { return Kernel(args...); }
};

#if PERSEUS_TORCH_VERSION_MAJOR == 1 && PERSEUS_TORCH_VERSION_MINOR <= 6
#define PERSEUS_IMPL(function) (&::perseus_torch::OldKernel<decltype(function), &function>::call)
#else
#define PERSEUS_IMPL(function) (&function)
#endif

#if !PERSEUS_TORCH_LIBRARY
// Before TORCH_LIBRARY: one registrar per translation unit; a schema registered by several units (the CPU
// and CUDA kernels of one op) is the same operator with one kernel per device.
inline std::string qualified(const char* schema) { return std::string("perseus::") + schema; }

// The dispatch key of CPU / CUDA tensors: a function in torch 1.2, TensorTypeId in 1.3-1.4, DispatchKey in 1.5.
#if PERSEUS_TORCH_VERSION_MAJOR == 1 && PERSEUS_TORCH_VERSION_MINOR <= 2
inline c10::TensorTypeId cpu_key() { return c10::CPUTensorId(); }
inline c10::TensorTypeId cuda_key() { return c10::CUDATensorId(); }
#elif PERSEUS_TORCH_VERSION_MAJOR == 1 && PERSEUS_TORCH_VERSION_MINOR <= 4
inline c10::TensorTypeId cpu_key() { return c10::TensorTypeId::CPUTensorId; }
inline c10::TensorTypeId cuda_key() { return c10::TensorTypeId::CUDATensorId; }
#else
inline c10::DispatchKey cpu_key() { return c10::DispatchKey::CPUTensorId; }
inline c10::DispatchKey cuda_key() { return c10::DispatchKey::CUDATensorId; }
#endif

#define PERSEUS_KERNEL(schema_name, function, key)                                                  \
  op(::perseus_torch::qualified(::perseus_torch::schema::schema_name),                                 \
     c10::RegisterOperators::options()                                                                 \
         .kernel<decltype(::perseus_torch::OldKernel<decltype(function), &function>::call),           \
                 &::perseus_torch::OldKernel<decltype(function), &function>::call>(key)                \
         .aliasAnalysis(c10::AliasAnalysisKind::FROM_SCHEMA))
#endif

}  // namespace perseus_torch
