// Shared by the CPU and CUDA op implementations: argument checks with messages that name the
// argument and the fix, and the translation of core status codes into Python exceptions.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <string>

#include "perseus/core.h"

// torch < 1.10 has no TORCH_CHECK_NOT_IMPLEMENTED, torch < 1.5 no TORCH_CHECK_VALUE / TORCH_CHECK_TYPE: there
// the message is the same, raised as RuntimeError
#ifndef TORCH_CHECK_NOT_IMPLEMENTED
#define TORCH_CHECK_NOT_IMPLEMENTED(cond, ...) TORCH_CHECK(cond, __VA_ARGS__)
#endif
#ifndef TORCH_CHECK_VALUE
#define TORCH_CHECK_VALUE(cond, ...) TORCH_CHECK(cond, __VA_ARGS__)
#endif
#ifndef TORCH_CHECK_TYPE
#define TORCH_CHECK_TYPE(cond, ...) TORCH_CHECK(cond, __VA_ARGS__)
#endif

namespace perseus_torch {

// Raises the Python exception that fits a failed core call (ValueError for bad values).
inline void check_status(perseus_status status, const char* op) {
  if (status == PERSEUS_OK) return;
  const std::string message = std::string("perseus.") + op + ": " + perseus_last_error();
  if (status == PERSEUS_ERR_INVALID_ARGUMENT) TORCH_CHECK_VALUE(false, message);
  if (status == PERSEUS_ERR_UNSUPPORTED) TORCH_CHECK_NOT_IMPLEMENTED(false, message);
  TORCH_CHECK(false, message);
}

// Tensor::data_ptr<T>() arrived in torch 1.3; callers checked the dtype already.
inline float* float_data(const at::Tensor& t) { return static_cast<float*>(t.data_ptr()); }

inline perseus_half_dtype half_dtype_of(const at::Tensor& t, const char* op, const char* arg) {
  if (t.scalar_type() == at::kHalf) return PERSEUS_FLOAT16;
  if (t.scalar_type() == at::kBFloat16) return PERSEUS_BFLOAT16;
  TORCH_CHECK_TYPE(false, "perseus.", op, ": ", arg, " must be float16 or bfloat16, got ", t.scalar_type());
}

inline void check_float32(const at::Tensor& t, const char* op, const char* arg) {
  TORCH_CHECK_TYPE(t.scalar_type() == at::kFloat, "perseus.", op, ": ", arg, " must be float32, got ",
                   t.scalar_type());
}

inline void check_contiguous(const at::Tensor& t, const char* op, const char* arg) {
  TORCH_CHECK_VALUE(t.is_contiguous(), "perseus.", op, ": ", arg,
                    " must be contiguous (call .contiguous() first; results are written in place)");
}

inline void check_same_device(const at::Tensor& a, const at::Tensor& b, const char* op) {
  TORCH_CHECK_VALUE(a.device() == b.device(), "perseus.", op, ": tensors on different devices (", a.device(),
                    " and ", b.device(), ")");
}

inline void check_same_numel(const at::Tensor& a, const at::Tensor& b, const char* op) {
  TORCH_CHECK_VALUE(a.numel() == b.numel(), "perseus.", op, ": src has ", a.numel(), " elements but dst has ",
                    b.numel());
}

inline void check_no_overlap(const at::Tensor& a, const at::Tensor& b, const char* op) {
  const auto* a0 = static_cast<const char*>(a.data_ptr());
  const auto* b0 = static_cast<const char*>(b.data_ptr());
  const bool disjoint = a.numel() == 0 || b.numel() == 0 || a0 + a.nbytes() <= b0 || b0 + b.nbytes() <= a0;
  TORCH_CHECK_VALUE(disjoint, "perseus.", op, ": src and dst overlap in memory; use separate buffers");
}

// compress(src f32, dst f16/bf16): returns the dtype, after every check.
inline perseus_half_dtype check_compress(const at::Tensor& src, const at::Tensor& dst, const char* op) {
  check_float32(src, op, "src");
  const perseus_half_dtype dtype = half_dtype_of(dst, op, "dst");
  check_same_device(src, dst, op);
  check_same_numel(src, dst, op);
  check_contiguous(src, op, "src");
  check_contiguous(dst, op, "dst");
  check_no_overlap(src, dst, op);
  return dtype;
}

inline perseus_half_dtype check_decompress(const at::Tensor& src, const at::Tensor& dst, const char* op) {
  const perseus_half_dtype dtype = half_dtype_of(src, op, "src");
  check_float32(dst, op, "dst");
  check_same_device(src, dst, op);
  check_same_numel(src, dst, op);
  check_contiguous(src, op, "src");
  check_contiguous(dst, op, "dst");
  check_no_overlap(src, dst, op);
  return dtype;
}

inline uint64_t check_downsample_n(int64_t n, int64_t step, const char* op) {
  TORCH_CHECK_VALUE(n >= 1, "perseus.", op, ": n = ", n,
                    " must be >= 1 (PERSEUS_DOWNSAMPLE_N_ELEMENTS; 1 sends every element)");
  TORCH_CHECK_VALUE(step >= 0, "perseus.", op, ": step = ", step, " must be >= 0");
  return static_cast<uint64_t>(n);
}

inline void check_element_size(const at::Tensor& t, const char* op) {
  const auto size = t.element_size();
  TORCH_CHECK_TYPE(size == 2 || size == 4 || size == 8, "perseus.", op, ": ", t.scalar_type(),
                   " elements are ", size, " bytes; 2, 4 or 8 byte types are supported");
}

// Shared checks of gather/scatter: returns the number of sent elements.
inline uint64_t check_gather(const at::Tensor& full, const at::Tensor& sent, int64_t n, int64_t step,
                             const char* op) {
  const uint64_t un = check_downsample_n(n, step, op);
  check_same_device(full, sent, op);
  TORCH_CHECK_TYPE(full.scalar_type() == sent.scalar_type(), "perseus.", op, ": dtypes differ (",
                   full.scalar_type(), " and ", sent.scalar_type(), ")");
  check_element_size(full, op);
  check_contiguous(full, op, "the full tensor");
  check_contiguous(sent, op, "the sent tensor");
  check_no_overlap(full, sent, op);
  const uint64_t count = perseus_downsample_count(static_cast<uint64_t>(full.numel()), un, static_cast<uint64_t>(step));
  TORCH_CHECK_VALUE(static_cast<uint64_t>(sent.numel()) == count, "perseus.", op, ": the sent tensor has ",
                    sent.numel(), " elements but step ", step, " with n = ", n, " sends ", count, " of ",
                    full.numel(), " (see downsample_count)");
  return count;
}

struct PackPlan {
  std::vector<const void*> srcs;
  std::vector<void*> dsts;
  std::vector<uint64_t> nbytes;
};

// pack/unpack: same dtype and device everywhere, contiguous, and a flat buffer large enough.
inline PackPlan check_pack(const at::TensorList tensors, const at::Tensor& flat, const char* op) {
  check_contiguous(flat, op, "the flat buffer");
  PackPlan plan;
  uint64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    TORCH_CHECK_TYPE(t.scalar_type() == flat.scalar_type(), "perseus.", op, ": tensor ", i, " is ",
                     t.scalar_type(), " but the flat buffer is ", flat.scalar_type());
    TORCH_CHECK_VALUE(t.device() == flat.device(), "perseus.", op, ": tensor ", i, " is on ", t.device(),
                      " but the flat buffer is on ", flat.device());
    TORCH_CHECK_VALUE(t.is_contiguous(), "perseus.", op, ": tensor ", i, " is not contiguous");
    check_no_overlap(t, flat, op);
    plan.srcs.push_back(t.data_ptr());
    plan.dsts.push_back(t.data_ptr());
    plan.nbytes.push_back(static_cast<uint64_t>(t.nbytes()));
    total += static_cast<uint64_t>(t.numel());
  }
  TORCH_CHECK_VALUE(total <= static_cast<uint64_t>(flat.numel()), "perseus.", op, ": the tensors hold ", total,
                    " elements but the flat buffer only ", flat.numel());
  return plan;
}

// The wheel's build manifest as JSON (src/manifest.cpp).
std::string build_manifest();

}  // namespace perseus_torch
