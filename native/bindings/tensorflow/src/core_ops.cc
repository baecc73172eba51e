// Ops over the native core: the build information and fp32 -> fp16/bf16 compression with the gradient
// scale and the non-finite count in one pass (perseus_compress), and its inverse.
#include <string>

#include "core_op.h"
#include "engine_bridge.h"
#include "perseus/core.h"
#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tf_compat.h"

namespace perseus_tf {
namespace {

using ::tensorflow::DataType;
using ::tensorflow::OpKernel;
using ::tensorflow::OpKernelConstruction;
using ::tensorflow::OpKernelContext;
using ::tensorflow::Tensor;
using ::tensorflow::TensorShape;
namespace errors = ::tensorflow::errors;

REGISTER_OP("PerseusBuildInfo")
    .Output("manifest: string")
    .Output("core_version: string")
    .Output("dispatch: string")
    .SetShapeFn([](::tensorflow::shape_inference::InferenceContext* c) {
      for (int i = 0; i < 3; ++i) c->set_output(i, c->Scalar());
      return ok_status();
    })
    .Doc("The build manifest compiled into this library, the core's release and its CPU dispatch path.");

class BuildInfoOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const std::string values[3] = {perseus_tf_build_manifest(), perseus_core_version(), perseus_dispatch_name()};
    for (int i = 0; i < 3; ++i) {
      Tensor* out = nullptr;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(i, TensorShape({}), &out));
      out->scalar<TfString>()() = values[i];
    }
  }
};
REGISTER_KERNEL_BUILDER(Name("PerseusBuildInfo").Device(::tensorflow::DEVICE_CPU), BuildInfoOp);
#if PERSEUS_TF_GPU
// on a GPU too (a graph placed there whole), with its strings in host memory as TensorFlow keeps every string
REGISTER_KERNEL_BUILDER(Name("PerseusBuildInfo")
                            .Device(::tensorflow::DEVICE_GPU)
                            .HostMemory("manifest")
                            .HostMemory("core_version")
                            .HostMemory("dispatch"),
                        BuildInfoOp);
#endif

REGISTER_OP("PerseusCompress")
    .Input("src: float")
    .Output("dst: T")
    .Output("nonfinite: int64")
    .Attr("T: {half, bfloat16} = DT_HALF")
    .Attr("scale: float = 1.0")
    .SetShapeFn([](::tensorflow::shape_inference::InferenceContext* c) {
      c->set_output(0, c->input(0));
      c->set_output(1, c->Scalar());
      return ok_status();
    })
    .Doc("dst = half(src * scale) in one rounding; nonfinite counts inf/NaN results.");

class CompressOp : public OpKernel {
 public:
  explicit CompressOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("scale", &scale_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("T", &type_));
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& src = ctx->input(0);
    Tensor* dst = nullptr;
    Tensor* nonfinite = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, src.shape(), &dst));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({}), &nonfinite));
    uint64_t count = 0;
    OP_REQUIRES_OK(ctx, core_status(perseus_compress(src.flat<float>().data(), buffer_of(*dst), half_of(type_),
                                                     static_cast<uint64_t>(src.NumElements()), scale_, &count),
                                    "compress"));
    nonfinite->scalar<TfInt64>()() = static_cast<TfInt64>(count);
  }

 private:
  float scale_ = 1.0f;
  DataType type_ = ::tensorflow::DT_HALF;
};
REGISTER_KERNEL_BUILDER(Name("PerseusCompress").Device(::tensorflow::DEVICE_CPU), CompressOp);

REGISTER_OP("PerseusDecompress")
    .Input("src: T")
    .Output("dst: float")
    .Output("nonfinite: int64")
    .Attr("T: {half, bfloat16}")
    .Attr("scale: float = 1.0")
    .Attr("world_size: int = 1")
    .SetShapeFn([](::tensorflow::shape_inference::InferenceContext* c) {
      c->set_output(0, c->input(0));
      c->set_output(1, c->Scalar());
      return ok_status();
    })
    .Doc("dst = float(src) / (scale * world_size); nonfinite counts inf/NaN inputs.");

class DecompressOp : public OpKernel {
 public:
  explicit DecompressOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
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
    uint64_t count = 0;
    OP_REQUIRES_OK(ctx, core_status(perseus_decompress(buffer_of(src), half_of(type_), dst->flat<float>().data(),
                                                       static_cast<uint64_t>(src.NumElements()), scale_,
                                                       world_size_, &count),
                                    "decompress"));
    nonfinite->scalar<TfInt64>()() = static_cast<TfInt64>(count);
  }

 private:
  float scale_ = 1.0f;
  TfInt64 world_size_ = 1;
  DataType type_ = ::tensorflow::DT_HALF;
};
REGISTER_KERNEL_BUILDER(Name("PerseusDecompress").Device(::tensorflow::DEVICE_CPU), DecompressOp);

}  // namespace
}  // namespace perseus_tf
