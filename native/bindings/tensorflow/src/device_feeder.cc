#include "device_feeder.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

#include <cuda_runtime_api.h>

namespace perseus_tf {
namespace {

std::string cuda_error(const char* what, cudaError_t status) {
  return std::string(what) + " failed: " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status);
}

struct Waiting {
  cudaEvent_t event;  // null when recording failed (then `error` says why)
  std::string error;
  std::function<void(const std::string&)> then;
};

// One thread waits for the events in the order they were recorded and runs each continuation. Never destroyed
// (as the bridge's completion thread): a detached thread outliving static destructors at exit is harmless.
class Feeder {
 public:
  Feeder() { std::thread([this] { run(); }).detach(); }

  void add(Waiting waiting) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(waiting));
    }
    wake_.notify_one();
  }

 private:
  void run() {
    for (;;) {
      Waiting next;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [this] { return !queue_.empty(); });
        next = std::move(queue_.front());
        queue_.pop_front();
      }
      if (next.event != nullptr) {
        const cudaError_t status = cudaEventSynchronize(next.event);
        if (status != cudaSuccess) next.error = cuda_error("cudaEventSynchronize", status);
        cudaEventDestroy(next.event);
      }
      next.then(next.error);
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Waiting> queue_;
};

Feeder& feeder() {
  static Feeder* instance = new Feeder();
  return *instance;
}

}  // namespace

int buffer_device(const void* buffer, std::string* error) {
  cudaPointerAttributes attributes{};
  const cudaError_t status = cudaPointerGetAttributes(&attributes, buffer);
  if (status != cudaSuccess) {
    *error = cuda_error("cudaPointerGetAttributes", status);
    return -1;
  }
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged) {
    *error = "the tensor's buffer is not CUDA device memory (cudaPointerGetAttributes type " +
             std::to_string(static_cast<int>(attributes.type)) + ")";
    return -1;
  }
  return attributes.device;
}

bool copy_on_stream(void* dst, const void* src, size_t bytes, void* stream, std::string* error) {
  const cudaError_t status =
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream));
  if (status == cudaSuccess) return true;
  *error = cuda_error("cudaMemcpyAsync", status);
  return false;
}

bool zero_on_stream(void* dst, size_t bytes, void* stream, std::string* error) {
  const cudaError_t status = cudaMemsetAsync(dst, 0, bytes, static_cast<cudaStream_t>(stream));
  if (status == cudaSuccess) return true;
  *error = cuda_error("cudaMemsetAsync", status);
  return false;
}

void after_stream(void* stream, std::function<void(const std::string& error)> then) {
  Waiting waiting{nullptr, std::string(), std::move(then)};
  cudaEvent_t event = nullptr;
  // blocking sync: the feeder sleeps instead of spinning a core while TensorFlow's stream catches up
  cudaError_t status = cudaEventCreateWithFlags(&event, cudaEventDisableTiming | cudaEventBlockingSync);
  if (status == cudaSuccess) {
    status = cudaEventRecord(event, static_cast<cudaStream_t>(stream));
    if (status == cudaSuccess) {
      waiting.event = event;
    } else {
      cudaEventDestroy(event);
      waiting.error = cuda_error("cudaEventRecord", status);
    }
  } else {
    waiting.error = cuda_error("cudaEventCreateWithFlags", status);
  }
  feeder().add(std::move(waiting));
}

}  // namespace perseus_tf
