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

// Horovod 0.28's dtype sets (bfloat16: a perseus extension). allreduce: uint8, int8, int32, int64 and the floats;
// broadcast and allgather add uint16, int16 and bool. A dtype outside gets TensorFlow's own op-definition error,
// as with Horovod's ops.
#define PERSEUS_TF_REDUCE_TYPES "T: {uint8, int8, int32, int64, half, bfloat16, float, double}"
#define PERSEUS_TF_MOVE_TYPES "T: {uint8, int8, uint16, int16, int32, int64, half, bfloat16, float, double, bool}"

// How a TensorFlow dtype travels: an engine dtype, or (int8, uint16, int16, bool) as bytes (uint8), with a
// trailing shape pattern unique to the dtype so that ranks submitting different dtypes of one width still fail
// the engine's match (int8 [1], bool [1, 1], int16 [2], uint16 [2, 1]). Sums of int8 as uint8 are exact: two's
// complement addition wraps the same way.
bool engine_dtype(DataType type, perseus_engine_dtype* out, std::vector<int64_t>* byte_pattern) {
  byte_pattern->clear();
  switch (type) {
    case ::tensorflow::DT_FLOAT: *out = PERSEUS_ENGINE_FLOAT32; return true;
    case ::tensorflow::DT_HALF: *out = PERSEUS_ENGINE_FLOAT16; return true;
    case ::tensorflow::DT_BFLOAT16: *out = PERSEUS_ENGINE_BFLOAT16; return true;
    case ::tensorflow::DT_DOUBLE: *out = PERSEUS_ENGINE_FLOAT64; return true;
    case ::tensorflow::DT_INT32: *out = PERSEUS_ENGINE_INT32; return true;
    case ::tensorflow::DT_INT64: *out = PERSEUS_ENGINE_INT64; return true;
    case ::tensorflow::DT_UINT8: *out = PERSEUS_ENGINE_UINT8; return true;
    case ::tensorflow::DT_INT8: *out = PERSEUS_ENGINE_UINT8; *byte_pattern = {1}; return true;
    case ::tensorflow::DT_BOOL: *out = PERSEUS_ENGINE_UINT8; *byte_pattern = {1, 1}; return true;
    case ::tensorflow::DT_INT16: *out = PERSEUS_ENGINE_UINT8; *byte_pattern = {2}; return true;
    case ::tensorflow::DT_UINT16: *out = PERSEUS_ENGINE_UINT8; *byte_pattern = {2, 1}; return true;
    default: return false;
  }
}

// The shape the engine compares across ranks: the tensor's own dimensions (so [17, 1311] and [17, 23, 57] fail
// the match though their element counts agree), leading ones folded together when there are more than the
// engine takes (keeping the first apart for allgather, whose first dimension may differ), then the dtype's
// byte pattern.
std::vector<int64_t> signature_shape(const Tensor& t, const std::vector<int64_t>& byte_pattern, bool keep_first) {
  std::vector<int64_t> dims;
  for (int d = 0; d < t.dims(); ++d) dims.push_back(t.dim_size(d));
  const size_t room = PERSEUS_ENGINE_MAX_DIMS - byte_pattern.size();
  if (dims.size() > room) {
    const size_t start = keep_first ? 1 : 0;
    const size_t fold = dims.size() - room + 1;
    int64_t merged = 1;
    for (size_t i = start; i < start + fold; ++i) merged *= dims[i];
    dims.erase(dims.begin() + static_cast<long>(start) + 1, dims.begin() + static_cast<long>(start + fold));
    dims[start] = merged;
  }
  dims.insert(dims.end(), byte_pattern.begin(), byte_pattern.end());
  return dims;
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
    OP_REQUIRES_OK(ctx, ctx->GetAttr("process_set_id", &process_set_id_));
  }

 protected:
  // The engine, or a failed op (and false) saying hvd.init() is missing.
  bool prepare(OpKernelContext* ctx, const DoneCallback& done, perseus_engine** engine, perseus_engine_dtype* dtype,
               std::vector<int64_t>* byte_pattern) {
    *engine = process_set_engine(process_set_id_);
    if (*engine == nullptr && process_set_id_ != 0 && current_engine() != nullptr) {
      ctx->SetStatus(errors::InvalidArgument("perseus.tensorflow ", type_string(), " '", name_, "': process set ",
                                             process_set_id_, " is not registered on this rank, or this rank is not "
                                             "a member of it: call hvd.add_process_set(...) on every rank first, and "
                                             "collectives on a set only on its members"));
      done();
      return false;
    }
    if (*engine == nullptr) {
      ctx->SetStatus(errors::FailedPrecondition("perseus.tensorflow ", type_string(), " '", name_,
                                                "': the engine is not initialised; call "
                                                "perseus.tensorflow.horovod.init() first"));
      done();
      return false;
    }
    if (!engine_dtype(ctx->input(0).dtype(), dtype, byte_pattern)) {
      ctx->SetStatus(errors::InvalidArgument("perseus.tensorflow: unsupported dtype ",
                                             ::tensorflow::DataTypeString(ctx->input(0).dtype())));
      done();
      return false;
    }
    return true;
  }

  // Submitted (true) or failed with the engine's message (false, done called). A submit this rank's engine
  // refused (a bad argument: the other ranks' submits were accepted) is made known to the others: a barrier
  // under the collective's name fails their collective at once as a mismatch (instead of their waiting out
  // GLOO_TIMEOUT_SECONDS); this rank's op then fails with its own error.
  bool submitted(OpKernelContext* ctx, const DoneCallback& done, perseus_engine* engine, perseus_engine_status status) {
    if (status == PERSEUS_ENGINE_OK) return true;
    const ::tensorflow::Status local = status_of(status, engine_error(type_string().c_str(), status));
    if (status == PERSEUS_ENGINE_INVALID_ARGUMENT || status == PERSEUS_ENGINE_UNSUPPORTED) {
      refuse(ctx, done, engine, local);
    } else {
      ctx->SetStatus(local);
      done();
    }
    return false;
  }

  // Fails this op with `error` after a barrier under the collective's name: the other ranks' collective of
  // that name fails at once as a mismatch (a rank that refuses locally never leaves them waiting).
  void refuse(OpKernelContext* ctx, const DoneCallback& done, perseus_engine* engine, const ::tensorflow::Status& error) {
    perseus_engine_handle barrier = 0;
    if (perseus_engine_barrier(engine, name_.c_str(), &barrier) == PERSEUS_ENGINE_OK) {
      complete_async(engine, barrier, [ctx, done, error](perseus_engine_status, const std::string&) {
        ctx->SetStatus(error);
        done();
      });
      return;
    }
    ctx->SetStatus(error);
    done();
  }

  std::string name_;
  int process_set_id_ = 0;  // 0: every rank (the global set); else a registered process set's engine
};

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

}  // namespace
}  // namespace perseus_tf
