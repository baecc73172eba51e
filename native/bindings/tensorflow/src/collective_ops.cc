// The engine's collectives as asynchronous TensorFlow ops (eager, tf.function, TF1 graphs): each
// submits its buffer by name (the name agrees the collective across ranks, the engine agrees the
// order) and returns at once; the bridge's completion thread finishes the op when the engine has.
#include <cstring>
#include <string>
#include <vector>

#include "engine_bridge.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tf_compat.h"

namespace perseus_tf {
namespace {

using ::tensorflow::AsyncOpKernel;
using ::tensorflow::DataType;
using ::tensorflow::OpKernelConstruction;
using ::tensorflow::OpKernelContext;
using ::tensorflow::Tensor;
using ::tensorflow::TensorShape;
namespace errors = ::tensorflow::errors;
namespace shape_inference = ::tensorflow::shape_inference;

#define PERSEUS_TF_TYPES "T: {half, bfloat16, float, double, int32, int64, uint8}"

bool engine_dtype(DataType type, perseus_engine_dtype* out) {
  switch (type) {
    case ::tensorflow::DT_FLOAT: *out = PERSEUS_ENGINE_FLOAT32; return true;
    case ::tensorflow::DT_HALF: *out = PERSEUS_ENGINE_FLOAT16; return true;
    case ::tensorflow::DT_BFLOAT16: *out = PERSEUS_ENGINE_BFLOAT16; return true;
    case ::tensorflow::DT_DOUBLE: *out = PERSEUS_ENGINE_FLOAT64; return true;
    case ::tensorflow::DT_INT32: *out = PERSEUS_ENGINE_INT32; return true;
    case ::tensorflow::DT_INT64: *out = PERSEUS_ENGINE_INT64; return true;
    case ::tensorflow::DT_UINT8: *out = PERSEUS_ENGINE_UINT8; return true;
    default: return false;
  }
}

::tensorflow::Status status_of(perseus_engine_status status, const std::string& message) {
  switch (status) {
    case PERSEUS_ENGINE_OK: return ok_status();
    case PERSEUS_ENGINE_INVALID_ARGUMENT: return errors::InvalidArgument(message);
    case PERSEUS_ENGINE_UNSUPPORTED: return errors::Unimplemented(message);
    case PERSEUS_ENGINE_MISMATCH: return errors::FailedPrecondition(message);
    case PERSEUS_ENGINE_SHUT_DOWN: return errors::Cancelled(message);
    case PERSEUS_ENGINE_NONFINITE: return errors::DataLoss(message);
    default: return errors::Unavailable(message);
  }
}

// What every collective op checks before submitting: an engine, a dtype the engine knows.
class CollectiveOp : public AsyncOpKernel {
 public:
  explicit CollectiveOp(OpKernelConstruction* ctx) : AsyncOpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("tensor_name", &name_));
    OP_REQUIRES(ctx, !name_.empty(), errors::InvalidArgument("perseus.tensorflow: a collective needs a tensor_name"));
  }

 protected:
  // The engine, or a failed op (and false) saying hvd.init() is missing.
  bool prepare(OpKernelContext* ctx, const DoneCallback& done, perseus_engine** engine, perseus_engine_dtype* dtype) {
    *engine = current_engine();
    if (*engine == nullptr) {
      ctx->SetStatus(errors::FailedPrecondition("perseus.tensorflow ", type_string(), " '", name_,
                                                "': the engine is not initialised; call "
                                                "perseus.tensorflow.horovod.init() first"));
      done();
      return false;
    }
    if (!engine_dtype(ctx->input(0).dtype(), dtype)) {
      ctx->SetStatus(errors::InvalidArgument("perseus.tensorflow: unsupported dtype ",
                                             ::tensorflow::DataTypeString(ctx->input(0).dtype())));
      done();
      return false;
    }
    return true;
  }

  // Submitted (true) or failed with the engine's message (false, done called).
  bool submitted(OpKernelContext* ctx, const DoneCallback& done, perseus_engine_status status) {
    if (status == PERSEUS_ENGINE_OK) return true;
    ctx->SetStatus(status_of(status, engine_error(type_string().c_str(), status)));
    done();
    return false;
  }

  std::string name_;
};

// The shape the engine compares across ranks: the element count (any rank, even > 8 dimensions).
int64_t flat_shape(const Tensor& t) { return t.NumElements(); }

REGISTER_OP("PerseusAllreduce")
    .Input("tensor: T")
    .Output("reduced: T")
    .Attr(PERSEUS_TF_TYPES)
    .Attr("tensor_name: string")
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
    if (!prepare(ctx, done, &engine, &dtype)) return;
    const Tensor& input = ctx->input(0);
    Tensor* output = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, input.shape(), &output), done);
    if (input.TotalBytes() > 0) std::memcpy(buffer_of(*output), buffer_of(input), input.TotalBytes());
    const int64_t shape[1] = {flat_shape(input)};
    perseus_engine_handle handle = 0;
    if (!submitted(ctx, done,
                   perseus_engine_allreduce(engine, name_.c_str(), buffer_of(*output), dtype, 1, shape, op_, &handle)))
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
    .Attr(PERSEUS_TF_TYPES)
    .Attr("tensor_name: string")
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
    if (!prepare(ctx, done, &engine, &dtype)) return;
    const Tensor& input = ctx->input(0);
    Tensor* output = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, input.shape(), &output), done);
    if (input.TotalBytes() > 0) std::memcpy(buffer_of(*output), buffer_of(input), input.TotalBytes());
    const int64_t shape[1] = {flat_shape(input)};
    perseus_engine_handle handle = 0;
    if (!submitted(ctx, done,
                   perseus_engine_broadcast(engine, name_.c_str(), buffer_of(*output), dtype, 1, shape, root_,
                                            &handle)))
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
    .Attr(PERSEUS_TF_TYPES)
    .Attr("tensor_name: string")
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
    if (!prepare(ctx, done, &engine, &dtype)) return;
    const Tensor& input = ctx->input(0);
    OP_REQUIRES_ASYNC(ctx, input.dims() >= 1,
                      errors::InvalidArgument("perseus.tensorflow allgather '", name_,
                                              "': needs a tensor of rank >= 1 (reshape a scalar to [1])"),
                      done);
    int64_t tail = 1;
    for (int d = 1; d < input.dims(); ++d) tail *= input.dim_size(d);
    const int64_t shape[2] = {input.dim_size(0), tail};
    perseus_engine_handle handle = 0;
    // the input tensor stays alive until done(): the op holds its inputs until then
    if (!submitted(ctx, done,
                   perseus_engine_allgather(engine, name_.c_str(), buffer_of(input), dtype, 2, shape, &handle)))
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

}  // namespace
}  // namespace perseus_tf
