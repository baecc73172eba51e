// Device (GPU) kernels of perseus_allreduce and perseus_broadcast: the tensor stays in device memory and goes to
// the engine's device entry points (perseus_engine_allreduce_device / _broadcast_device: NCCL, or the core's
// CUDA kernels + Gloo with host staging; docs/device.md), the same entry perseus.torch uses. The op copies its
// input into its output on TensorFlow's stream (none when TensorFlow forwards the input's buffer), the feeder
// thread submits once that stream got there, and the bridge's completion thread calls done. CUDA builds only.
#include <functional>
#include <string>
#include <vector>

#include "collective_op.h"
#include "device_feeder.h"
#include "gpu_stream.h"

namespace perseus_tf {
namespace {

using DeviceSubmit = std::function<perseus_engine_status(perseus_engine* engine, void* buffer,
                                                         perseus_engine_dtype dtype, const std::vector<int64_t>& shape,
                                                         int device, perseus_engine_handle* handle)>;
using HostSubmit = std::function<perseus_engine_status(perseus_engine* engine, void* buffer,
                                                       perseus_engine_dtype dtype, const std::vector<int64_t>& shape,
                                                       perseus_engine_handle* handle)>;

// An in-place collective on the output (the input's bytes): allreduce and broadcast alike.
class DeviceCollectiveOp : public CollectiveOp {
 public:
  using CollectiveOp::CollectiveOp;

 protected:
  void run(OpKernelContext* ctx, const DoneCallback& done, const DeviceSubmit& on_device, const HostSubmit& on_host) {
    perseus_engine* engine = nullptr;
    perseus_engine_dtype dtype;
    std::vector<int64_t> pattern;
    if (!prepare(ctx, done, &engine, &dtype, &pattern)) return;
    const Tensor& input = ctx->input(0);
    const std::vector<int64_t> shape = signature_shape(input, pattern, false);
    const void* source = buffer_of(input);
    const size_t bytes = input.TotalBytes();
    Tensor* output = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->forward_input_or_allocate_output({0}, 0, input.shape(), &output), done);
    perseus_engine_handle handle = 0;
    if (bytes == 0) {
      // no bytes to place anywhere: every rank has the same (empty) shape, so every rank takes this path
      static char nothing = 0;
      if (!submitted(ctx, done, engine, on_host(engine, &nothing, dtype, shape, &handle))) return;
      finish(ctx, done, engine, handle);
      return;
    }
    void* buffer = buffer_of(*output);
    std::string error;
    void* stream = op_stream(ctx);
    int device = -1;
    if (stream == nullptr) {
      error = "the op has no CUDA stream (its device context has none)";
    } else if (buffer == source || copy_on_stream(buffer, source, bytes, stream, &error)) {
      device = buffer_device(buffer, &error);
    }
    if (device < 0) {
      refuse(ctx, done, engine, errors::Internal("perseus.tensorflow ", type_string(), " '", name_, "' on ",
                                                 ctx->device()->name(), ": ", error));
      return;
    }
    after_stream(stream, [this, ctx, done, engine, buffer, dtype, shape, device, on_device](const std::string& cuda) {
      if (!cuda.empty()) {
        refuse(ctx, done, engine, errors::Internal("perseus.tensorflow ", type_string(), " '", name_, "': ", cuda));
        return;
      }
      perseus_engine_handle handle = 0;
      if (!submitted(ctx, done, engine, on_device(engine, buffer, dtype, shape, device, &handle))) return;
      finish(ctx, done, engine, handle);
    });
  }

 private:
  static void finish(OpKernelContext* ctx, const DoneCallback& done, perseus_engine* engine,
                     perseus_engine_handle handle) {
    complete_async(engine, handle, [ctx, done](perseus_engine_status status, const std::string& message) {
      ctx->SetStatus(status_of(status, message));
      done();
    });
  }
};

class AllreduceDeviceOp : public DeviceCollectiveOp {
 public:
  explicit AllreduceDeviceOp(OpKernelConstruction* ctx) : DeviceCollectiveOp(ctx) {
    std::string op;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("reduce_op", &op));
    op_ = op == "average" ? PERSEUS_ENGINE_AVERAGE : PERSEUS_ENGINE_SUM;
  }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const std::string name = name_;
    const perseus_engine_reduce_op op = op_;
    run(ctx, done,
        [name, op](perseus_engine* engine, void* buffer, perseus_engine_dtype dtype, const std::vector<int64_t>& shape,
                   int device, perseus_engine_handle* handle) {
          return perseus_engine_allreduce_device(engine, name.c_str(), buffer, dtype, static_cast<int>(shape.size()),
                                                 shape.data(), op, device, handle);
        },
        [name, op](perseus_engine* engine, void* buffer, perseus_engine_dtype dtype, const std::vector<int64_t>& shape,
                   perseus_engine_handle* handle) {
          return perseus_engine_allreduce(engine, name.c_str(), buffer, dtype, static_cast<int>(shape.size()),
                                          shape.data(), op, handle);
        });
  }

 private:
  perseus_engine_reduce_op op_ = PERSEUS_ENGINE_SUM;
};
REGISTER_KERNEL_BUILDER(Name("PerseusAllreduce").Device(::tensorflow::DEVICE_GPU), AllreduceDeviceOp);

class BroadcastDeviceOp : public DeviceCollectiveOp {
 public:
  explicit BroadcastDeviceOp(OpKernelConstruction* ctx) : DeviceCollectiveOp(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("root_rank", &root_));
  }
  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const std::string name = name_;
    const int root = root_;
    run(ctx, done,
        [name, root](perseus_engine* engine, void* buffer, perseus_engine_dtype dtype,
                     const std::vector<int64_t>& shape, int device, perseus_engine_handle* handle) {
          return perseus_engine_broadcast_device(engine, name.c_str(), buffer, dtype, static_cast<int>(shape.size()),
                                                 shape.data(), root, device, handle);
        },
        [name, root](perseus_engine* engine, void* buffer, perseus_engine_dtype dtype,
                     const std::vector<int64_t>& shape, perseus_engine_handle* handle) {
          return perseus_engine_broadcast(engine, name.c_str(), buffer, dtype, static_cast<int>(shape.size()),
                                          shape.data(), root, handle);
        });
  }

 private:
  int root_ = 0;
};
REGISTER_KERNEL_BUILDER(Name("PerseusBroadcast").Device(::tensorflow::DEVICE_GPU), BroadcastDeviceOp);

}  // namespace
}  // namespace perseus_tf
