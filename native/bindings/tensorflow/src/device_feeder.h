// The CUDA side of the device kernels (no TensorFlow header): copies on TensorFlow's stream, the device of a
// buffer, and the thread that submits a device collective once TensorFlow's stream has reached it. Compiled in
// CUDA builds only (PERSEUS_TF_GPU=1), against the CUDA runtime the core links (statically).
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace perseus_tf {

// The CUDA device the buffer lives on (cudaPointerGetAttributes: this process's numbering, as the engine's),
// or -1 with *error naming the CUDA error.
int buffer_device(const void* buffer, std::string* error);

// Device-to-device copy / zeroing enqueued on `stream` (a cudaStream_t); false with *error on a CUDA error.
bool copy_on_stream(void* dst, const void* src, size_t bytes, void* stream, std::string* error);
bool zero_on_stream(void* dst, size_t bytes, void* stream, std::string* error);

// Runs `then` once the work enqueued on `stream` so far has finished: an event recorded now, waited for on one
// feeder thread, in call order. `then` gets "" or the CUDA error that kept the event from being recorded or
// waited for. The engine's stream never waits for TensorFlow's, so a collective is submitted only after the
// producer of its buffer finished (and TensorFlow's allocator gave the output memory to this op).
void after_stream(void* stream, std::function<void(const std::string& error)> then);

}  // namespace perseus_tf
