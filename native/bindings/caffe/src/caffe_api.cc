// libperseus-caffe's Caffe-facing layer over the engine's C ABI: join the job, broadcast, averaged
// allreduce of a step's diffs (submitted together: the engine negotiates them in one cycle and fuses
// them). No collective logic of its own: wire dtype, fusion, NaN check are the engine's.
#include <perseus/caffe.h>
#include <perseus/engine.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "launch_env.h"

namespace {

struct State {
  bool initialised = false;
  perseus::caffe::LaunchEnv env;
  perseus_engine_options* options = nullptr;  // opaque: set and read by name
  perseus_engine* engine = nullptr;
  perseus_engine_info info{};
  std::string description;
  std::string last_error;
};

State& state() {
  static State s;
  return s;
}

int fail(const std::string& message) {
  state().last_error = message;
  return -1;
}

int engine_fail(const std::string& what, perseus_engine_status status) {
  return fail("perseus-caffe: " + what + ": " + perseus_engine_status_string(status) + ": " +
              perseus_engine_last_error());
}

// One engine option as text ("" when the engine does not know the name: it cannot, the names are the engine's own).
std::string option(const perseus_engine_options* o, const char* name) {
  char text[512];
  return perseus_engine_options_get(o, name, text, sizeof(text)) == PERSEUS_ENGINE_OK ? text : "";
}

int option_int(const perseus_engine_options* o, const char* name) { return std::atoi(option(o, name).c_str()); }

perseus_engine_dtype engine_dtype(perseus_caffe_dtype dtype) {
  return dtype == PERSEUS_CAFFE_FLOAT64 ? PERSEUS_ENGINE_FLOAT64 : PERSEUS_ENGINE_FLOAT32;
}

std::string describe(const State& s) {
  const perseus::caffe::LaunchEnv& e = s.env;
  char line[512];
  if (s.engine == nullptr) {
    std::snprintf(line, sizeof(line), "one process (launcher: %s): no communication", e.launcher.c_str());
    return line;
  }
  const perseus_engine_info& i = s.info;
  const char* wire = i.intra_fp16 && i.inter_fp16 ? "fp16" : (!i.intra_fp16 && !i.inter_fp16 ? "fp32" : "fp32 in a node, fp16 between nodes");
  std::snprintf(line, sizeof(line),
                "rank %d of %d (local %d of %d, node %d of %d, launcher %s%s), %s on the wire (gradient scale %g), "
                "%s, fusion %s, %d stream(s), NaN check %s",
                i.rank, i.size, i.local_rank, i.local_size, i.node, i.num_nodes, e.launcher.c_str(),
                e.use_mpi_bootstrap ? ", MPI bootstrap" : "", wire,
                std::atof(option(s.options, "gradient_scale").c_str()), i.hierarchical ? "two levels" : "one level",
                option_int(s.options, "fusion") < 0 ? "automatic" : option(s.options, "fusion").c_str(), i.streams,
                option_int(s.options, "nancheck") ? "on" : "off");
  return line;
}

// Submits one collective per buffer, then waits for all of them; the first failure is reported.
template <typename Submit>
int run_all(const char* what, void* const* buffers, const int64_t* counts, int n, Submit submit) {
  State& s = state();
  if (!s.initialised) return fail(std::string("perseus-caffe: ") + what + " before perseus_caffe_init()");
  if (n < 0 || (n > 0 && (buffers == nullptr || counts == nullptr))) {
    return fail(std::string("perseus-caffe: ") + what + ": n < 0 or NULL buffers/counts");
  }
  if (s.engine == nullptr) return 0;  // one process: nothing to exchange
  std::vector<perseus_engine_handle> handles;
  handles.reserve(n);
  int rc = 0;
  for (int i = 0; i < n && rc == 0; ++i) {
    if (counts[i] < 0 || (counts[i] > 0 && buffers[i] == nullptr)) {
      rc = fail(std::string("perseus-caffe: ") + what + ": buffer " + std::to_string(i) + " is NULL or its count < 0");
      break;
    }
    perseus_engine_handle h = 0;
    perseus_engine_status st = submit(i, &h);
    if (st != PERSEUS_ENGINE_OK) {
      rc = engine_fail(std::string(what) + " of buffer " + std::to_string(i), st);
      break;
    }
    handles.push_back(h);
  }
  for (size_t i = 0; i < handles.size(); ++i) {
    perseus_engine_status st = perseus_engine_wait(s.engine, handles[i]);
    if (st != PERSEUS_ENGINE_OK && rc == 0) rc = engine_fail(std::string(what) + " of buffer " + std::to_string(i), st);
    perseus_engine_release(s.engine, handles[i]);
  }
  return rc;
}

}  // namespace

extern "C" {

int perseus_caffe_abi_version(void) { return PERSEUS_CAFFE_ABI_VERSION; }

int perseus_caffe_init(void) {
  State& s = state();
  if (s.initialised) return 0;
  try {
    s.env = perseus::caffe::detect(perseus::caffe::process_environ());
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  perseus_engine_status st = s.options != nullptr ? PERSEUS_ENGINE_OK : perseus_engine_options_new(&s.options);
  if (st == PERSEUS_ENGINE_OK) st = perseus_engine_options_from_env(s.options);
  if (st != PERSEUS_ENGINE_OK) return engine_fail("reading the PERSEUS_* variables", st);
  if (s.env.size > 1) {
    if (s.env.use_mpi_bootstrap) {
      st = perseus_engine_options_from_mpi(s.options);
      if (st != PERSEUS_ENGINE_OK) return engine_fail("joining the mpirun job", st);
      s.env.rank = option_int(s.options, "rank");
      s.env.size = option_int(s.options, "size");
      s.env.local_rank = option_int(s.options, "local_rank");
      s.env.local_size = option_int(s.options, "local_size");
      s.env.node_rank = option_int(s.options, "node_rank");
    } else {
      std::vector<std::pair<const char*, std::string>> numbers = {
          {"rank", std::to_string(s.env.rank)},           {"size", std::to_string(s.env.size)},
          {"local_rank", std::to_string(s.env.local_rank)}, {"local_size", std::to_string(s.env.local_size)},
          {"node_rank", std::to_string(s.env.node_rank)}};
      if (option_int(s.options, "serve_store") != 0) {  // else PERSEUS_STORE_ADDR (the store perseusrun serves) named it
        numbers.emplace_back("master_addr", s.env.master_addr);
        numbers.emplace_back("master_port", std::to_string(s.env.master_port));
      }
      for (const auto& [name, value] : numbers) {
        st = perseus_engine_options_set(s.options, name, value.c_str());
        if (st != PERSEUS_ENGINE_OK) return engine_fail(std::string("setting the engine's ") + name, st);
      }
    }
    st = perseus_engine_create(s.options, &s.engine);
    if (st != PERSEUS_ENGINE_OK) return engine_fail("joining the job (rendezvous)", st);
    st = perseus_engine_info_get(s.engine, &s.info);
    if (st != PERSEUS_ENGINE_OK) return engine_fail("reading the engine's state", st);
  }
  s.initialised = true;
  s.description = describe(s);
  return 0;
}

int perseus_caffe_rank(void) { return state().env.rank; }
int perseus_caffe_size(void) { return state().env.size; }
int perseus_caffe_local_rank(void) { return state().env.local_rank; }
int perseus_caffe_local_size(void) { return state().env.local_size; }
const char* perseus_caffe_describe(void) {
  return state().initialised ? state().description.c_str() : "not initialised (perseus_caffe_init)";
}

int perseus_caffe_broadcast(void* const* buffers, const int64_t* counts, int n, perseus_caffe_dtype dtype, int root) {
  State& s = state();
  if (root < 0 || root >= s.env.size) return fail("perseus-caffe: broadcast root " + std::to_string(root) + " is not a rank");
  return run_all("broadcast", buffers, counts, n, [&](int i, perseus_engine_handle* h) {
    const int64_t shape[1] = {counts[i]};
    const std::string name = "caffe.param." + std::to_string(i);
    return perseus_engine_broadcast(s.engine, name.c_str(), buffers[i], engine_dtype(dtype), 1, shape, root, h);
  });
}

int perseus_caffe_allreduce_average(void* const* buffers, const int64_t* counts, int n, perseus_caffe_dtype dtype) {
  State& s = state();
  return run_all("allreduce", buffers, counts, n, [&](int i, perseus_engine_handle* h) {
    const int64_t shape[1] = {counts[i]};
    const std::string name = "caffe.diff." + std::to_string(i);
    return perseus_engine_allreduce(s.engine, name.c_str(), buffers[i], engine_dtype(dtype), 1, shape,
                                    PERSEUS_ENGINE_AVERAGE, h);
  });
}

const struct perseus_engine_info* perseus_caffe_engine_info(void) {
  State& s = state();
  if (s.engine == nullptr || perseus_engine_info_get(s.engine, &s.info) != PERSEUS_ENGINE_OK) return nullptr;
  return &s.info;
}

int perseus_caffe_finalize(void) {
  State& s = state();
  if (!s.initialised) return 0;
  s.initialised = false;
  perseus_engine_options_free(s.options);  // the next init reads the environment afresh
  s.options = nullptr;
  perseus_engine* engine = s.engine;
  s.engine = nullptr;
  if (engine == nullptr) return 0;
  perseus_engine_status st = perseus_engine_destroy(engine);
  return st == PERSEUS_ENGINE_OK ? 0 : engine_fail("shutting down", st);
}

const char* perseus_caffe_last_error(void) { return state().last_error.c_str(); }

}  // extern "C"
