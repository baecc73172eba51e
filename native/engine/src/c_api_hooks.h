// What c_api.cc lends the C ABI's device-buffer entry points (c_api_device.cc / c_api_device_off.cc):
// its exception-to-status wrapper, the engine behind a handle, and its request checks.
#pragma once

#include <functional>

#include "engine.h"
#include "perseus/engine.h"

namespace perseus::engine::c_api {
perseus_engine_status run_guarded(const std::function<void()>& f);
Engine& engine_of(perseus_engine* e);
Request request(const char* name, Kind kind, int dtype, int ndim, const int64_t* shape);
// Defined beside the device entry points (c_api_device.cc or c_api_device_off.cc, in perseus_engine_impl):
// perseus_engine_abi_version() calls it, so a library that compiles c_api.cc links them too.
int abi_version_with_device_entry_points();
}  // namespace perseus::engine::c_api
