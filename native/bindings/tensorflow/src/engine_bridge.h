// The engine the collective ops submit to, and the thread that completes them. No TensorFlow header:
// the ops (collective_ops.cc) adapt TensorFlow's types to this.
#pragma once

#include <functional>
#include <string>

#include "perseus/engine.h"

namespace perseus_tf {

// The engine set by perseus_tf_set_engine() (Python: perseus.tensorflow.horovod.init()); null before.
perseus_engine* current_engine();

// The engine of a registered process set (perseus_tf_set_process_set_engine; id 0: current_engine()); null when
// this rank holds none for `process_set_id` (not registered, removed, or this rank is not a member).
perseus_engine* process_set_engine(int process_set_id);

// Called on the completion thread once the collective `handle` finished: OK, or the status and the
// engine's message. The callback releases nothing: the bridge releases the handle after it returns.
using Completion = std::function<void(perseus_engine_status status, const std::string& message)>;

// Hands `handle` to the completion thread, which polls it (collectives complete in any order).
void complete_async(perseus_engine* engine, perseus_engine_handle handle, Completion completion);

// The message of a failed call made on this thread, prefixed with what was being done.
std::string engine_error(const char* what, perseus_engine_status status);

}  // namespace perseus_tf

extern "C" {
// Python hands over the engine it created through perseus.engine (ctypes on this very library, which
// contains the engine statically) and clears it (nullptr) before destroying it.
__attribute__((visibility("default"))) void perseus_tf_set_engine(perseus_engine* engine);
// The engine over a process set's members (perseus.tensorflow.horovod.add_process_set), or nullptr to forget
// the set (remove_process_set, shutdown) before that engine is destroyed. process_set_id >= 1.
__attribute__((visibility("default"))) void perseus_tf_set_process_set_engine(int process_set_id,
                                                                              perseus_engine* engine);
// The build manifest compiled into this library (the same JSON as build_manifest.json).
__attribute__((visibility("default"))) const char* perseus_tf_build_manifest(void);
}
