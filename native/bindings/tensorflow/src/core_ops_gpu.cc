// Device (GPU) kernels of perseus_compress and perseus_decompress: the core's CUDA kernels
// (perseus_cuda_compress / perseus_cuda_decompress) on TensorFlow's stream of the op's GPU. The non-finite count
// is an int64 scalar in device memory, zeroed and summed on that stream: no synchronisation (as perseus.torch's
// CUDA ops). CUDA builds only.
#include <string>

#include "core_op.h"
#include "device_feeder.h"
#include "gpu_stream.h"
#include "tensorflow/core/framework/op_kernel.h"

namespace perseus_tf {
namespace {

using ::tensorflow::DataType;
using ::tensorflow::OpKernel;
using ::tensorflow::OpKernelConstruction;
using ::tensorflow::OpKernelContext;
using ::tensorflow::Tensor;
using ::tensorflow::TensorShape;
namespace errors = ::tensorflow::errors;

// The op's stream, with the count's output zeroed on it; null (and the op failed) on an error.
void* counting_stream(OpKernelContext* ctx, Tensor* nonfinite, const char* op) {
  void* stream = op_stream(ctx);
  std::string error = "the op has no CUDA stream (its device context has none)";
  if (stream != nullptr && zero_on_stream(buffer_of(*nonfinite), sizeof(TfInt64), stream, &error)) return stream;
  ctx->SetStatus(errors::Internal("perseus.", op, " on ", ctx->device()->name(), ": ", error));
  return nullptr;
}

unsigned long long* counter_of(Tensor* nonfinite) {
  return static_cast<unsigned long long*>(buffer_of(*nonfinite));
}

class CompressDeviceOp : public OpKernel {
 public:
  explicit CompressDeviceOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("scale", &scale_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("T", &type_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& src = ctx->input(0);
    Tensor* dst = nullptr;
    Tensor* nonfinite = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, src.shape(), &dst));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({}), &nonfinite));
    void* stream = counting_stream(ctx, nonfinite, "compress");
    if (stream == nullptr) return;
    OP_REQUIRES_OK(ctx, core_status(perseus_cuda_compress(src.flat<float>().data(), buffer_of(*dst), half_of(type_),
                                                          static_cast<uint64_t>(src.NumElements()), scale_,
                                                          counter_of(nonfinite), stream),
                                    "compress"));
  }

 private:
  float scale_ = 1.0f;
  DataType type_ = ::tensorflow::DT_HALF;
};
REGISTER_KERNEL_BUILDER(Name("PerseusCompress").Device(::tensorflow::DEVICE_GPU), CompressDeviceOp);

class DecompressDeviceOp : public OpKernel {
 public:
  explicit DecompressDeviceOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("scale", &scale_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("world_size", &world_size_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("T", &type_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& src = ctx->input(0);
    Tensor* dst = nullptr;
    Tensor* nonfinite = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, src.shape(), &dst));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({}), &nonfinite));
    void* stream = counting_stream(ctx, nonfinite, "decompress");
    if (stream == nullptr) return;
    OP_REQUIRES_OK(ctx, core_status(perseus_cuda_decompress(buffer_of(src), half_of(type_), dst->flat<float>().data(),
                                                            static_cast<uint64_t>(src.NumElements()), scale_,
                                                            world_size_, counter_of(nonfinite), stream),
                                    "decompress"));
  }

 private:
  float scale_ = 1.0f;
  TfInt64 world_size_ = 1;
  DataType type_ = ::tensorflow::DT_HALF;
};
REGISTER_KERNEL_BUILDER(Name("PerseusDecompress").Device(::tensorflow::DEVICE_GPU), DecompressDeviceOp);

}  // namespace
}  // namespace perseus_tf
