// The CUDA stream of a GPU op: TensorFlow's compute stream of the op's device (its device context's
// stream_executor::Stream), as the cudaStream_t the core's kernels and the CUDA runtime take.
#pragma once

#include "tensorflow/core/framework/op_kernel.h"
#if __has_include("xla/stream_executor/stream.h")
#include "xla/stream_executor/stream.h"  // TensorFlow >= 2.16
#else
#include "tensorflow/compiler/xla/stream_executor/stream.h"
#endif

namespace perseus_tf {
namespace stream_detail {

// Newer stream executors: Stream::platform_specific_handle().stream (the CUstream).
template <typename S>
auto raw_stream(S* stream, int) -> decltype(static_cast<void*>(stream->platform_specific_handle().stream)) {
  return stream->platform_specific_handle().stream;
}
// Older ones (TensorFlow 2.14): the implementation's GpuStreamHack() (what gpu_kernel_helper.h reads).
template <typename S>
void* raw_stream(S* stream, long) {
  return stream->implementation()->GpuStreamHack();
}

}  // namespace stream_detail

// The op's cudaStream_t, or null when the op has no GPU stream (it is not placed on a GPU).
inline void* op_stream(::tensorflow::OpKernelContext* ctx) {
  ::tensorflow::DeviceContext* context = ctx->op_device_context();
  if (context == nullptr || context->stream() == nullptr) return nullptr;
  return stream_detail::raw_stream(context->stream(), 0);
}

}  // namespace perseus_tf
