// The C ABI (perseus/engine.h) over the C++ engine: argument checks, exceptions -> status + message.
#include <cstring>
#include <memory>
#include <string>

#include "device_api.h"
#include "downsample.h"
#include "engine.h"
#include "tcp_store.h"
#include "errors.h"
#include "mpi_loader.h"
#include "options.h"
#include "perseus/engine.h"

using perseus::engine::Engine;
using perseus::engine::EngineError;
using perseus::engine::invalid_argument;
using perseus::engine::Kind;
using perseus::engine::Request;

struct perseus_engine {
  Engine engine;
  perseus::engine::Downsampler downsampler;  // perseus_engine_allreduce_downsampled
  explicit perseus_engine(const perseus_engine_options& o) : engine(o) {}
};

struct perseus_engine_store {
  perseus::engine::TcpStoreServer server;
  perseus_engine_store(const std::string& host, int port) : server(host, port) {}
};

namespace {

thread_local std::string g_last_error;

perseus_engine_status fail(perseus_engine_status s, const std::string& message) {
  g_last_error = message;
  return s;
}

template <typename F>
perseus_engine_status guarded(F&& f) {
  try {
    f();
    g_last_error.clear();
    return PERSEUS_ENGINE_OK;
  } catch (const EngineError& e) {
    return fail(e.status(), e.what());
  } catch (const std::bad_alloc&) {
    return fail(PERSEUS_ENGINE_INVALID_ARGUMENT, "perseus engine: out of memory");
  } catch (const std::exception& e) {
    return fail(PERSEUS_ENGINE_COMMUNICATION, std::string("perseus engine: ") + e.what());
  }
}

void need(const void* p, const char* what) {
  if (p == nullptr) throw invalid_argument(std::string("perseus engine: ") + what + " is NULL");
}

Request make_request(const char* name, Kind kind, int dtype, int ndim, const int64_t* shape) {
  need(name, "name");
  if (name[0] == '\0') throw invalid_argument("perseus engine: a collective needs a non-empty name");
  Request r;
  r.name = name;
  r.kind = kind;
  r.dtype = dtype;
  if (kind == Kind::kBarrier) return r;
  if (dtype < 0 || dtype > PERSEUS_ENGINE_UINT8) {
    throw invalid_argument("perseus engine: '" + r.name + "': unknown dtype " + std::to_string(dtype));
  }
  if (ndim < 0 || ndim > PERSEUS_ENGINE_MAX_DIMS) {
    throw invalid_argument("perseus engine: '" + r.name + "': ndim " + std::to_string(ndim) + " is outside 0.." +
                           std::to_string(PERSEUS_ENGINE_MAX_DIMS));
  }
  if (ndim > 0) need(shape, "shape");
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] < 0) throw invalid_argument("perseus engine: '" + r.name + "': negative dimension in its shape");
    r.shape.push_back(shape[i]);
  }
  return r;
}

void check_engine(perseus_engine* e) { need(e, "engine"); }

}  // namespace

extern "C" {

int perseus_engine_abi_version(void) { return PERSEUS_ENGINE_ABI_VERSION; }

const char* perseus_engine_last_error(void) { return g_last_error.c_str(); }

const char* perseus_engine_status_string(perseus_engine_status status) {
  switch (status) {
    case PERSEUS_ENGINE_OK: return "ok";
    case PERSEUS_ENGINE_INVALID_ARGUMENT: return "invalid argument";
    case PERSEUS_ENGINE_UNSUPPORTED: return "not supported";
    case PERSEUS_ENGINE_COMMUNICATION: return "communication failure";
    case PERSEUS_ENGINE_MISMATCH: return "collective mismatch across ranks";
    case PERSEUS_ENGINE_NONFINITE: return "non-finite result";
    case PERSEUS_ENGINE_SHUT_DOWN: return "engine shut down";
    case PERSEUS_ENGINE_PENDING: return "pending";
  }
  return "unknown status";
}

perseus_engine_status perseus_engine_options_new(perseus_engine_options** options) {
  return guarded([&] {
    need(options, "options (output)");
    auto fresh = std::make_unique<perseus_engine_options>();
    perseus::engine::default_options(fresh.get());
    *options = fresh.release();
  });
}

void perseus_engine_options_free(perseus_engine_options* options) { delete options; }

perseus_engine_status perseus_engine_options_set(perseus_engine_options* options, const char* name, const char* value) {
  return guarded([&] {
    need(options, "options");
    need(name, "name");
    need(value, "value");
    perseus::engine::set_option(options, name, value);
  });
}

perseus_engine_status perseus_engine_options_get(const perseus_engine_options* options, const char* name, char* out,
                                                 size_t capacity) {
  return guarded([&] {
    need(options, "options");
    need(name, "name");
    need(out, "out");
    std::string text = perseus::engine::option_text(*options, name);
    if (text.size() >= capacity) {
      throw perseus::engine::invalid_argument(std::string("option ") + name + " needs " + std::to_string(text.size() + 1) +
                                              " bytes; the buffer has " + std::to_string(capacity));
    }
    std::memcpy(out, text.c_str(), text.size() + 1);
  });
}

const char* perseus_engine_option_name(int index, int* kind, const char** variable) {
  const auto& all = perseus::engine::option_names();
  if (index < 0 || size_t(index) >= all.size()) return nullptr;
  if (kind != nullptr) *kind = int(all[size_t(index)].kind);
  if (variable != nullptr) *variable = all[size_t(index)].variable;
  return all[size_t(index)].field;
}

perseus_engine_status perseus_engine_options_from_env(perseus_engine_options* options) {
  return guarded([&] {
    need(options, "options");
    perseus::engine::options_from_env(options);
  });
}

perseus_engine_status perseus_engine_options_from_mpi(perseus_engine_options* options) {
  return guarded([&] {
    need(options, "options");
    perseus::engine::options_from_mpi(options);
  });
}

perseus_engine_status perseus_engine_create(const perseus_engine_options* options, perseus_engine** engine) {
  return guarded([&] {
    need(options, "options");
    need(engine, "engine (output)");
    perseus::engine::validate_options(*options);
    *engine = new perseus_engine(*options);
  });
}

perseus_engine_status perseus_engine_destroy(perseus_engine* engine) {
  if (engine == nullptr) return PERSEUS_ENGINE_OK;
  std::string failure;
  perseus_engine_status s = guarded([&] {
    engine->engine.shutdown();
    failure = engine->engine.failure();
  });
  delete engine;
  if (s == PERSEUS_ENGINE_OK && !failure.empty()) return fail(PERSEUS_ENGINE_COMMUNICATION, "perseus engine: " + failure);
  return s;
}

perseus_engine_status perseus_engine_store_serve(const char* host, int port, perseus_engine_store** store) {
  return guarded([&] {
    need(store, "store");
    if (port < 0 || port > 65535) throw invalid_argument("perseus engine: store port " + std::to_string(port) + " is not 0..65535");
    try {
      *store = new perseus_engine_store(host ? host : "", port);
    } catch (const EngineError&) {
      throw;
    } catch (const std::exception& e) {
      throw EngineError(PERSEUS_ENGINE_COMMUNICATION, std::string("perseus engine: cannot serve the rendezvous store: ") + e.what());
    }
  });
}

int perseus_engine_store_port(perseus_engine_store* store) { return store ? store->server.port() : -1; }

perseus_engine_status perseus_engine_store_stop(perseus_engine_store* store) {
  delete store;
  return PERSEUS_ENGINE_OK;
}

perseus_engine_status perseus_engine_info_get(perseus_engine* engine, perseus_engine_info* info) {
  return guarded([&] {
    check_engine(engine);
    need(info, "info");
    *info = engine->engine.info();
  });
}

perseus_engine_status perseus_engine_allreduce(perseus_engine* engine, const char* name, void* buffer,
                                               perseus_engine_dtype dtype, int ndim, const int64_t* shape,
                                               perseus_engine_reduce_op op, perseus_engine_handle* handle) {
  return guarded([&] {
    check_engine(engine);
    need(handle, "handle (output)");
    Request r = make_request(name, Kind::kAllreduce, dtype, ndim, shape);
    if (op != PERSEUS_ENGINE_SUM && op != PERSEUS_ENGINE_AVERAGE) {
      throw invalid_argument("perseus engine: '" + r.name + "': reduce op must be sum (0) or average (1)");
    }
    if (op == PERSEUS_ENGINE_AVERAGE && (dtype == PERSEUS_ENGINE_INT32 || dtype == PERSEUS_ENGINE_INT64 ||
                                         dtype == PERSEUS_ENGINE_UINT8)) {
      throw perseus::engine::unsupported("average of integer tensors ('" + r.name + "'): use sum and divide");
    }
    r.op = op;
    if (perseus::engine::numel(r.shape) > 0) need(buffer, "buffer");
    *handle = engine->engine.submit(std::move(r), buffer, nullptr);
  });
}

perseus_engine_status perseus_engine_broadcast(perseus_engine* engine, const char* name, void* buffer,
                                               perseus_engine_dtype dtype, int ndim, const int64_t* shape, int root,
                                               perseus_engine_handle* handle) {
  return guarded([&] {
    check_engine(engine);
    need(handle, "handle (output)");
    Request r = make_request(name, Kind::kBroadcast, dtype, ndim, shape);
    auto info = engine->engine.info();
    if (root < 0 || root >= info.size) {
      throw invalid_argument("perseus engine: broadcast '" + r.name + "': root " + std::to_string(root) +
                             " is not a rank of this job (0.." + std::to_string(info.size - 1) + ")");
    }
    r.root = root;
    if (perseus::engine::numel(r.shape) > 0) need(buffer, "buffer");
    *handle = engine->engine.submit(std::move(r), buffer, nullptr);
  });
}

perseus_engine_status perseus_engine_allgather(perseus_engine* engine, const char* name, const void* buffer,
                                               perseus_engine_dtype dtype, int ndim, const int64_t* shape,
                                               perseus_engine_handle* handle) {
  return guarded([&] {
    check_engine(engine);
    need(handle, "handle (output)");
    if (ndim < 1) throw invalid_argument("perseus engine: allgather needs a tensor of at least one dimension");
    Request r = make_request(name, Kind::kAllgather, dtype, ndim, shape);
    if (perseus::engine::numel(r.shape) > 0) need(buffer, "buffer");
    *handle = engine->engine.submit(std::move(r), nullptr, buffer);
  });
}

perseus_engine_status perseus_engine_barrier(perseus_engine* engine, const char* name, perseus_engine_handle* handle) {
  return guarded([&] {
    check_engine(engine);
    need(handle, "handle (output)");
    *handle = engine->engine.submit(make_request(name, Kind::kBarrier, 0, 0, nullptr), nullptr, nullptr);
  });
}

perseus_engine_status perseus_engine_poll(perseus_engine* engine, perseus_engine_handle handle) {
  perseus_engine_status result = PERSEUS_ENGINE_OK;
  perseus_engine_status s = guarded([&] {
    check_engine(engine);
    auto op = engine->engine.find(handle);
    std::lock_guard<std::mutex> lock(op->mu);
    if (!op->done) {
      result = PERSEUS_ENGINE_PENDING;
    } else if (op->status != PERSEUS_ENGINE_OK) {
      throw EngineError(op->status, op->error);
    } else {
      engine->downsampler.complete(handle);
    }
  });
  return s != PERSEUS_ENGINE_OK ? s : result;
}

perseus_engine_status perseus_engine_wait(perseus_engine* engine, perseus_engine_handle handle) {
  return guarded([&] {
    check_engine(engine);
    auto op = engine->engine.find(handle);
    std::unique_lock<std::mutex> lock(op->mu);
    op->cv.wait(lock, [&] { return op->done; });
    if (op->status != PERSEUS_ENGINE_OK) throw EngineError(op->status, op->error);
    lock.unlock();
    engine->downsampler.complete(handle);
  });
}

perseus_engine_status perseus_engine_allgather_result(perseus_engine* engine, perseus_engine_handle handle,
                                                      int64_t* first_dims, void* out, uint64_t out_bytes,
                                                      uint64_t* total_bytes) {
  return guarded([&] {
    check_engine(engine);
    auto op = engine->engine.find(handle);
    std::lock_guard<std::mutex> lock(op->mu);
    if (op->request.kind != Kind::kAllgather) throw invalid_argument("perseus engine: handle is not an allgather");
    if (!op->done || op->status != PERSEUS_ENGINE_OK) {
      throw invalid_argument("perseus engine: allgather '" + op->request.name + "' has no result: wait for it first");
    }
    if (total_bytes != nullptr) *total_bytes = op->gathered.size();
    if (first_dims != nullptr) std::memcpy(first_dims, op->first_dims.data(), op->first_dims.size() * sizeof(int64_t));
    if (out != nullptr) {
      if (out_bytes < op->gathered.size()) {
        throw invalid_argument("perseus engine: allgather '" + op->request.name + "' needs " +
                               std::to_string(op->gathered.size()) + " output bytes, got " + std::to_string(out_bytes));
      }
      std::memcpy(out, op->gathered.data(), op->gathered.size());
    }
  });
}

perseus_engine_status perseus_engine_release(perseus_engine* engine, perseus_engine_handle handle) {
  return guarded([&] {
    check_engine(engine);
    engine->engine.release(handle);
    engine->downsampler.forget(handle);
  });
}

// ---- gradients: gossip downsampling, wire accounting ------------------------------------------

perseus_engine_status perseus_engine_allreduce_downsampled(perseus_engine* engine, const char* name, float* buffer,
                                                           int64_t numel, int n, float momentum,
                                                           perseus_engine_reduce_op op, perseus_engine_handle* handle) {
  return guarded([&] {
    check_engine(engine);
    need(handle, "handle (output)");
    need(name, "name");
    if (n < 1) throw invalid_argument("perseus engine: PERSEUS_DOWNSAMPLE_N_ELEMENTS must be >= 1, got " + std::to_string(n));
    if (numel < 0) throw invalid_argument("perseus engine: '" + std::string(name) + "': negative numel");
    if (op != PERSEUS_ENGINE_SUM && op != PERSEUS_ENGINE_AVERAGE) {
      throw invalid_argument("perseus engine: '" + std::string(name) + "': reduce op must be sum (0) or average (1)");
    }
    if (numel > 0) need(buffer, "buffer");
    auto slice = engine->downsampler.begin(name, buffer, uint64_t(numel), uint64_t(n), momentum);
    try {
      const int64_t shape[1] = {int64_t(slice.count)};
      Request r = make_request(slice.name.c_str(), Kind::kAllreduce, PERSEUS_ENGINE_FLOAT32, 1, shape);
      r.op = op;
      *handle = engine->engine.submit(std::move(r), slice.data, nullptr);
    } catch (...) {
      engine->downsampler.abandon();
      throw;
    }
    engine->downsampler.bind(*handle);
  });
}

perseus_engine_status perseus_engine_wire_bytes(perseus_engine* engine, const char* level, perseus_engine_dtype dtype,
                                                uint64_t* bytes, uint64_t* collectives) {
  return guarded([&] {
    check_engine(engine);
    need(level, "level");
    uint64_t b = 0, c = 0;
    engine->engine.wire_bytes(level, dtype, b, c);
    if (bytes != nullptr) *bytes = b;
    if (collectives != nullptr) *collectives = c;
  });
}

// ---- device buffers (CUDA): device_api.h ---------------------------------------------------------

perseus_engine_status perseus_engine_allreduce_device(perseus_engine* engine, const char* name, void* device_buffer,
                                                      perseus_engine_dtype dtype, int ndim, const int64_t* shape,
                                                      perseus_engine_reduce_op op, int device,
                                                      perseus_engine_handle* handle) {
  return guarded([&] {
    check_engine(engine);
    need(handle, "handle (output)");
    Request r = make_request(name, Kind::kAllreduce, dtype, ndim, shape);
    *handle = perseus::engine::device_api::allreduce(engine->engine, std::move(r), device_buffer, op, device);
  });
}

perseus_engine_status perseus_engine_broadcast_device(perseus_engine* engine, const char* name, void* device_buffer,
                                                      perseus_engine_dtype dtype, int ndim, const int64_t* shape,
                                                      int root, int device, perseus_engine_handle* handle) {
  return guarded([&] {
    check_engine(engine);
    need(handle, "handle (output)");
    Request r = make_request(name, Kind::kBroadcast, dtype, ndim, shape);
    *handle = perseus::engine::device_api::broadcast(engine->engine, std::move(r), device_buffer, root, device);
  });
}

perseus_engine_status perseus_engine_device_report_get(perseus_engine_device_report* report) {
  return guarded([&] {
    need(report, "report");
    perseus::engine::device_api::report(report);
  });
}

perseus_engine_status perseus_engine_library_dir_add(const char* dir) {
  return guarded([&] {
    need(dir, "dir");
    perseus::engine::device_api::add_library_dir(dir);
  });
}

}  // extern "C"
