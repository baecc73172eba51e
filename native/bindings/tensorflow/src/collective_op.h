// What the collective ops' host and device kernels share: how a TensorFlow dtype and shape travel, the
// engine's status as a TensorFlow status, and the base class that finds the engine and refuses a submit.
#pragma once

#include <string>
#include <vector>

#include "engine_bridge.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tf_compat.h"

namespace perseus_tf {

using ::tensorflow::AsyncOpKernel;
using ::tensorflow::DataType;
using ::tensorflow::OpKernelConstruction;
using ::tensorflow::OpKernelContext;
using ::tensorflow::Tensor;
using ::tensorflow::TensorShape;
namespace errors = ::tensorflow::errors;

// How a TensorFlow dtype travels: an engine dtype, or (int8, uint16, int16, bool) as bytes (uint8), with a
// trailing shape pattern unique to the dtype so that ranks submitting different dtypes of one width still fail
// the engine's match (int8 [1], bool [1, 1], int16 [2], uint16 [2, 1]). Sums of int8 as uint8 are exact: two's
// complement addition wraps the same way.
inline bool engine_dtype(DataType type, perseus_engine_dtype* out, std::vector<int64_t>* byte_pattern) {
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
inline std::vector<int64_t> signature_shape(const Tensor& t, const std::vector<int64_t>& byte_pattern, bool keep_first) {
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

inline ::tensorflow::Status status_of(perseus_engine_status status, const std::string& message) {
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

}  // namespace perseus_tf
