// The engine's collectives as asynchronous TensorFlow ops (eager, tf.function, TF1 graphs): each
// submits its buffer by name (the name agrees the collective across ranks, the engine agrees the
// order) and returns at once; the bridge's completion thread finishes the op when the engine has.
#include <cstring>
#include <string>
#include <vector>

#include "collective_op.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tf_compat.h"

namespace perseus_tf {
namespace {

namespace shape_inference = ::tensorflow::shape_inference;

// Horovod 0.28's dtype sets (bfloat16: a perseus extension). allreduce: uint8, int8, int32, int64 and the floats;
// broadcast and allgather add uint16, int16 and bool. A dtype outside gets TensorFlow's own op-definition error,
// as with Horovod's ops.
#define PERSEUS_TF_REDUCE_TYPES "T: {uint8, int8, int32, int64, half, bfloat16, float, double}"
#define PERSEUS_TF_MOVE_TYPES "T: {uint8, int8, uint16, int16, int32, int64, half, bfloat16, float, double, bool}"

REGISTER_OP("PerseusAllreduce")
    .Input("tensor: T")
    .Output("reduced: T")
    .Attr(PERSEUS_TF_REDUCE_TYPES)
    .Attr("tensor_name: string")
    .Attr("process_set_id: int = 0")
    .Attr("reduce_op: {'sum', 'average'} = 'sum'")
    .SetIsStateful()
    .SetShapeFn([](shape_inference::InferenceContext* c) {
      c->set_output(0, c->input(0));
      return ok_status();
    })
    .Doc("Sum or average of the tensor over every rank (PERSEUS_ALLREDUCE_DTYPE decides fp32's wire).");

class AllreduceOp : public CollectiveOp {
 public:
  explicit AllreduceOp(OpKernelConstruction* ctx) : CollectiveOp(ctx) {
    std::string op;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("reduce_op", &op));
    op_ = op == "average" ? PERSEUS_ENGINE_AVERAGE : PERSEUS_ENGINE_SUM;
  }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    perseus_engine* engine = nullptr;
    perseus_engine_dtype dtype;
    std::vector<int64_t> pattern;
    if (!prepare(ctx, done, &engine, &dtype, &pattern)) return;
    const Tensor& input = ctx->input(0);
    Tensor* output = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, input.shape(), &output), done);
    if (input.TotalBytes() > 0) std::memcpy(buffer_of(*output), buffer_of(input), input.TotalBytes());
    const std::vector<int64_t> shape = signature_shape(input, pattern, false);
    perseus_engine_handle handle = 0;
    if (!submitted(ctx, done, engine,
                   perseus_engine_allreduce(engine, name_.c_str(), buffer_of(*output), dtype,
                                            static_cast<int>(shape.size()), shape.data(), op_, &handle)))
      return;
    complete_async(engine, handle, [ctx, done](perseus_engine_status status, const std::string& message) {
      ctx->SetStatus(status_of(status, message));
      done();
    });
  }

 private:
  perseus_engine_reduce_op op_ = PERSEUS_ENGINE_SUM;
};
REGISTER_KERNEL_BUILDER(Name("PerseusAllreduce").Device(::tensorflow::DEVICE_CPU), AllreduceOp);

REGISTER_OP("PerseusBroadcast")
    .Input("tensor: T")
    .Output("broadcast: T")
    .Attr(PERSEUS_TF_MOVE_TYPES)
    .Attr("tensor_name: string")
    .Attr("process_set_id: int = 0")
    .Attr("root_rank: int = 0")
    .SetIsStateful()
    .SetShapeFn([](shape_inference::InferenceContext* c) {
      c->set_output(0, c->input(0));
      return ok_status();
    })
    .Doc("The root rank's tensor on every rank.");

class BroadcastOp : public CollectiveOp {
 public:
  explicit BroadcastOp(OpKernelConstruction* ctx) : CollectiveOp(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("root_rank", &root_));
  }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    perseus_engine* engine = nullptr;
    perseus_engine_dtype dtype;
    std::vector<int64_t> pattern;
    if (!prepare(ctx, done, &engine, &dtype, &pattern)) return;
    const Tensor& input = ctx->input(0);
    Tensor* output = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, input.shape(), &output), done);
    if (input.TotalBytes() > 0) std::memcpy(buffer_of(*output), buffer_of(input), input.TotalBytes());
    const std::vector<int64_t> shape = signature_shape(input, pattern, false);
    perseus_engine_handle handle = 0;
    if (!submitted(ctx, done, engine,
                   perseus_engine_broadcast(engine, name_.c_str(), buffer_of(*output), dtype,
                                            static_cast<int>(shape.size()), shape.data(), root_, &handle)))
      return;
    complete_async(engine, handle, [ctx, done](perseus_engine_status status, const std::string& message) {
      ctx->SetStatus(status_of(status, message));
      done();
    });
  }

 private:
  int root_ = 0;
};
REGISTER_KERNEL_BUILDER(Name("PerseusBroadcast").Device(::tensorflow::DEVICE_CPU), BroadcastOp);

REGISTER_OP("PerseusAllgather")
    .Input("tensor: T")
    .Output("gathered: T")
    .Attr(PERSEUS_TF_MOVE_TYPES)
    .Attr("tensor_name: string")
    .Attr("process_set_id: int = 0")
    .SetIsStateful()
    .SetShapeFn([](shape_inference::InferenceContext* c) {
      shape_inference::ShapeHandle rest;
      TF_RETURN_IF_ERROR(c->WithRankAtLeast(c->input(0), 1, &rest));
      shape_inference::ShapeHandle tail;
      TF_RETURN_IF_ERROR(c->Subshape(c->input(0), 1, &tail));
      shape_inference::ShapeHandle out;
      TF_RETURN_IF_ERROR(c->Concatenate(c->Vector(c->UnknownDim()), tail, &out));
      c->set_output(0, out);
      return ok_status();
    })
    .Doc("Every rank's tensor concatenated along the first dimension (which may differ by rank).");

class AllgatherOp : public CollectiveOp {
 public:
  using CollectiveOp::CollectiveOp;
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    perseus_engine* engine = nullptr;
    perseus_engine_dtype dtype;
    std::vector<int64_t> pattern;
    if (!prepare(ctx, done, &engine, &dtype, &pattern)) return;
    const Tensor& input = ctx->input(0);
    if (input.dims() < 1) {
      refuse(ctx, done, engine,
             errors::InvalidArgument("perseus.tensorflow allgather '", name_,
                                     "': needs a tensor of rank >= 1 (reshape a scalar to [1])"));
      return;
    }
    const std::vector<int64_t> shape = signature_shape(input, pattern, true);
    perseus_engine_handle handle = 0;
    // the input tensor stays alive until done(): the op holds its inputs until then
    if (!submitted(ctx, done, engine,
                   perseus_engine_allgather(engine, name_.c_str(), buffer_of(input), dtype,
                                            static_cast<int>(shape.size()), shape.data(), &handle)))
      return;
    complete_async(engine, handle, [ctx, done, engine, handle](perseus_engine_status status, const std::string& message) {
      if (status != PERSEUS_ENGINE_OK) {
        ctx->SetStatus(status_of(status, message));
        done();
        return;
      }
      const Tensor& in = ctx->input(0);
      uint64_t total = 0;
      perseus_engine_status s = perseus_engine_allgather_result(engine, handle, nullptr, nullptr, 0, &total);
      if (s != PERSEUS_ENGINE_OK) {
        ctx->SetStatus(status_of(s, engine_error("allgather", s)));
        done();
        return;
      }
      int64_t row_bytes = ::tensorflow::DataTypeSize(in.dtype());
      for (int d = 1; d < in.dims(); ++d) row_bytes *= in.dim_size(d);
      TensorShape out_shape = in.shape();
      out_shape.set_dim(0, row_bytes > 0 ? static_cast<int64_t>(total) / row_bytes : 0);
      if (row_bytes == 0) {
        // rows of zero elements: the total says nothing; ask for every rank's first dimension
        std::vector<int64_t> dims(static_cast<size_t>(info_size(engine)));
        s = perseus_engine_allgather_result(engine, handle, dims.data(), nullptr, 0, &total);
        int64_t sum = 0;
        for (int64_t d : dims) sum += d;
        out_shape.set_dim(0, sum);
      }
      Tensor* output = nullptr;
      ::tensorflow::Status st = ctx->allocate_output(0, out_shape, &output);
      if (st.ok() && total > 0) {
        s = perseus_engine_allgather_result(engine, handle, nullptr, buffer_of(*output), output->TotalBytes(), &total);
        if (s != PERSEUS_ENGINE_OK) st = status_of(s, engine_error("allgather", s));
      }
      ctx->SetStatus(st);
      done();
    });
  }

 private:
  static int info_size(perseus_engine* engine) {
    perseus_engine_info info;
    return perseus_engine_info_get(engine, &info) == PERSEUS_ENGINE_OK ? info.size : 1;
  }
};
REGISTER_KERNEL_BUILDER(Name("PerseusAllgather").Device(::tensorflow::DEVICE_CPU), AllgatherOp);
#if PERSEUS_TF_GPU
// The engine's device path has no allgather (docs/device.md): on a GPU the op takes its tensor and gives its result
// in host memory, so TensorFlow copies a device tensor to the host before it and the result back after it.
REGISTER_KERNEL_BUILDER(
    Name("PerseusAllgather").Device(::tensorflow::DEVICE_GPU).HostMemory("tensor").HostMemory("gathered"),
    AllgatherOp);
#endif

}  // namespace
}  // namespace perseus_tf
