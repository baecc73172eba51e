// The device-buffer entry points of the C ABI (perseus/engine.h, ABI 3) behind c_api.cc's thin extern "C"
// wrappers, which every library exporting the C ABI compiles itself (the engine's, the bindings'): here the
// checks and the submission, in c_api_device.cc (-DPERSEUS_ENGINE_DEVICE=ON) or c_api_device_off.cc. Each
// throws EngineError; c_api.cc turns it into a status and a message.
#pragma once

#include <cstdint>

#include "engine.h"
#include "perseus/engine.h"

namespace perseus::engine::device_api {

// r: checked by c_api.cc (name, dtype, shape); op / root still to check here.
int64_t allreduce(Engine& engine, Request r, void* buffer, int op, int device);
int64_t broadcast(Engine& engine, Request r, void* buffer, int root, int device);
void report(perseus_engine_device_report* out);
void add_library_dir(const char* dir);

}  // namespace perseus::engine::device_api
