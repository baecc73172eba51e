#include "options.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "errors.h"
#include "perseus/variables.h"

namespace perseus::engine {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

}  // namespace

// Every alias perseus.config declares (PERSEUS_ENV_ALIASES, generated from the declarations) is read here too.
#define PERSEUS_ALIAS_ENTRY(name, alias) {name, alias},
static constexpr struct { const char* name; const char* alias; } kAliases[] = {
    PERSEUS_ENV_ALIASES(PERSEUS_ALIAS_ENTRY){nullptr, nullptr}};
#undef PERSEUS_ALIAS_ENTRY

Setting setting(const char* name) {
  if (const char* v = env(name)) return {name, v};  // the declared name wins over an alias
  for (const auto& a : kAliases) {
    if (a.name != nullptr && std::strcmp(a.name, name) == 0) {
      if (const char* v = env(a.alias)) return {a.alias, v};
    }
  }
  return {name, nullptr};
}

namespace {

long parse_int(const char* name, const char* text, long lo, long hi, const char* accepts) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) {
    throw invalid_argument(std::string(name) + "='" + text + "' is not valid: it accepts " + accepts);
  }
  return v;
}

double parse_double(const char* name, const char* text, const char* accepts) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !std::isfinite(v) || v <= 0) {
    throw invalid_argument(std::string(name) + "='" + text + "' is not valid: it accepts " + accepts);
  }
  return v;
}

void copy_text(char* dst, size_t cap, const char* src, const char* name) {
  if (std::strlen(src) >= cap) {
    throw invalid_argument(std::string(name) + " is longer than " + std::to_string(cap - 1) + " characters");
  }
  std::strncpy(dst, src, cap);
}

}  // namespace

void default_options(perseus_engine_options* o) {
  std::memset(o, 0, sizeof(*o));
  o->rank = 0;
  o->size = 1;
  o->local_rank = 0;
  o->local_size = 1;
  o->node_rank = 0;
  std::strcpy(o->master_addr, "127.0.0.1");
  o->master_port = 0;
  o->serve_store = -1;  // automatic: rank 0 serves
  o->wire_dtype = PERSEUS_DEFAULT_ALLREDUCE_DTYPE;
  o->mode = -1;  // automatic (PERSEUS_ALLREDUCE_MODE has no default)
  o->gradient_scale = float(PERSEUS_DEFAULT_ALLREDUCE_GRADIENT_SCALE);
  o->streams = PERSEUS_DEFAULT_ALLREDUCE_STREAMS;  // an upper limit: the tuner measures 1 against it
  o->stream_tuning = 1;
  o->fusion = -1;  // automatic
  o->nancheck = PERSEUS_DEFAULT_ALLREDUCE_NANCHECK;
  o->timeout_seconds = PERSEUS_DEFAULT_GLOO_TIMEOUT_SECONDS;
  o->cycle_ms = PERSEUS_DEFAULT_CYCLE_TIME_MS;
  o->offline_neg = PERSEUS_DEFAULT_OFFLINE_NEG;
  o->shared_memory = PERSEUS_DEFAULT_SHM_DISABLE ? 0 : 1;
}

void options_from_env(perseus_engine_options* o) {
  // Names, ranges, defaults and the text an error shows come from the one declaration of the variables
  // (perseus/variables.h, generated from perseus.config), so the engine accepts exactly what the Python runtime
  // accepts and says so in the same words.
#define PERSEUS_DECLARED_INT(SUFFIX, s) \
  parse_int((s).name, (s).value, PERSEUS_MIN_##SUFFIX, PERSEUS_MAX_##SUFFIX, PERSEUS_ACCEPTS_##SUFFIX)
  if (Setting s = setting(PERSEUS_ENV_ALLREDUCE_DTYPE); s.value != nullptr) {
    o->wire_dtype = int(PERSEUS_DECLARED_INT(ALLREDUCE_DTYPE, s));
  }
  if (Setting s = setting(PERSEUS_ENV_ALLREDUCE_MODE); s.value != nullptr) {
    o->mode = int(PERSEUS_DECLARED_INT(ALLREDUCE_MODE, s));
  }
  if (Setting s = setting(PERSEUS_ENV_ALLREDUCE_GRADIENT_SCALE); s.value != nullptr) {
    o->gradient_scale = float(parse_double(s.name, s.value, PERSEUS_ACCEPTS_ALLREDUCE_GRADIENT_SCALE));
  }
  if (Setting s = setting(PERSEUS_ENV_ALLREDUCE_STREAMS); s.value != nullptr) {
    o->streams = int(PERSEUS_DECLARED_INT(ALLREDUCE_STREAMS, s));
    o->stream_tuning = 0;  // the user's count is used as it is
  }
  if (Setting s = setting(PERSEUS_ENV_ALLREDUCE_FUSION); s.value != nullptr) {
    o->fusion = int(PERSEUS_DECLARED_INT(ALLREDUCE_FUSION, s));
  }
  if (Setting s = setting(PERSEUS_ENV_ALLREDUCE_NANCHECK); s.value != nullptr) {
    o->nancheck = int(PERSEUS_DECLARED_INT(ALLREDUCE_NANCHECK, s));
  }
  if (Setting s = setting(PERSEUS_ENV_GLOO_TIMEOUT_SECONDS); s.value != nullptr) {  // declared without a maximum
    o->timeout_seconds = int(parse_int(s.name, s.value, PERSEUS_MIN_GLOO_TIMEOUT_SECONDS, INT_MAX,
                                       PERSEUS_ACCEPTS_GLOO_TIMEOUT_SECONDS));
  }
  if (Setting s = setting(PERSEUS_ENV_CYCLE_TIME_MS); s.value != nullptr) {
    o->cycle_ms = parse_double(s.name, s.value, PERSEUS_ACCEPTS_CYCLE_TIME_MS);
  }
  if (Setting s = setting(PERSEUS_ENV_OFFLINE_NEG); s.value != nullptr) {
    o->offline_neg = int(PERSEUS_DECLARED_INT(OFFLINE_NEG, s));
  }
  if (Setting s = setting(PERSEUS_ENV_SHM_DISABLE); s.value != nullptr) {
    o->shared_memory = PERSEUS_DECLARED_INT(SHM_DISABLE, s) ? 0 : 1;
  }
#undef PERSEUS_DECLARED_INT
  if (const char* v = env("PERSEUS_STORE_ADDR")) {  // perseusrun serves the store: join it, serve none
    const char* colon = std::strrchr(v, ':');
    if (colon == nullptr || colon == v) {
      throw invalid_argument(std::string("PERSEUS_STORE_ADDR='") + v + "' is not HOST:PORT (perseusrun sets it; unset "
                             "it when launching otherwise)");
    }
    std::string host(v, size_t(colon - v));
    o->master_port = int(parse_int("PERSEUS_STORE_ADDR's port", colon + 1, 1, 65535, "a TCP port 1-65535"));
    copy_text(o->master_addr, sizeof(o->master_addr), host.c_str(), "PERSEUS_STORE_ADDR's host");
    o->serve_store = 0;
  }
  const char* iface = setting(PERSEUS_ENV_GLOO_NETWORK_INTERFACE).value;
  if (iface == nullptr) iface = env("GLOO_SOCKET_IFNAME");
  if (iface != nullptr) copy_text(o->iface, sizeof(o->iface), iface, PERSEUS_ENV_GLOO_NETWORK_INTERFACE);
}

void validate_options(const perseus_engine_options& o) {
  auto bad = [](const std::string& m) { throw invalid_argument("perseus engine options: " + m); };
  if (o.size < 1) bad("size " + std::to_string(o.size) + " must be >= 1");
  if (o.rank < 0 || o.rank >= o.size) bad("rank " + std::to_string(o.rank) + " is outside 0.." + std::to_string(o.size - 1));
  if (o.local_size < 1 || o.local_rank < 0 || o.local_rank >= o.local_size) {
    bad("local rank " + std::to_string(o.local_rank) + " / local size " + std::to_string(o.local_size) + " are inconsistent");
  }
  if (o.node_rank < 0) bad("node_rank must be >= 0");
  if (o.size > 1 && (o.master_port < 1 || o.master_port > 65535)) {
    bad("master_port " + std::to_string(o.master_port) + " is not a TCP port: set PERSEUS_MASTER_PORT (1..65535)");
  }
  if (std::strlen(o.master_addr) == 0 && o.size > 1) bad("master_addr is empty: set MASTER_ADDR");
  if (o.wire_dtype < 0 || o.wire_dtype > 2) bad("wire_dtype must be 0, 1 or 2 (PERSEUS_ALLREDUCE_DTYPE)");
  if (o.mode < -1 || o.mode > 1) bad("mode must be -1 (automatic), 0 or 1 (PERSEUS_ALLREDUCE_MODE)");
  if (o.mode == 0 && o.wire_dtype == 2) {
    bad("PERSEUS_ALLREDUCE_MODE=0 (one level) cannot be combined with PERSEUS_ALLREDUCE_DTYPE=2, which needs two "
        "levels: unset PERSEUS_ALLREDUCE_MODE or set it to 1, or choose PERSEUS_ALLREDUCE_DTYPE 0 or 1");
  }
  if (!(o.gradient_scale > 0) || !std::isfinite(o.gradient_scale)) bad("gradient_scale must be finite and > 0");
  if (o.streams < PERSEUS_MIN_ALLREDUCE_STREAMS || o.streams > PERSEUS_MAX_ALLREDUCE_STREAMS) {
    bad("streams must be 1-12 (PERSEUS_ALLREDUCE_STREAMS)");
  }
  if (o.fusion < -1 || o.fusion > 128) bad("fusion must be -1 (automatic), 0 or 1..128 (PERSEUS_ALLREDUCE_FUSION)");
  if (o.timeout_seconds < 1) bad("timeout_seconds must be >= 1 (GLOO_TIMEOUT_SECONDS)");
  if (!(o.cycle_ms > 0)) bad("cycle_ms must be > 0 (PERSEUS_CYCLE_TIME_MS)");
  if (o.stream_tuning < 0 || o.stream_tuning > 1) bad("stream_tuning must be 0 or 1");
  if (o.offline_neg < 0 || o.offline_neg > 1) bad("offline_neg must be 0 or 1 (PERSEUS_OFFLINE_NEG)");
  if (o.shared_memory < 0 || o.shared_memory > 1) bad("shared_memory must be 0 or 1 (PERSEUS_SHM_DISABLE)");
  if (o.serve_store < -1 || o.serve_store > 1) bad("serve_store must be -1 (rank 0 serves), 0 or 1");
}

}  // namespace perseus::engine
