#include "options.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "errors.h"

namespace perseus::engine {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

// ---- the table: who-this-process-is fields by hand, every declared option from perseus/variables.h ---------------

using Options = perseus_engine_options;

struct IdentityInt {
  const char* field;
  int Options::*member;
};
struct IdentityText {
  const char* field;
  char (Options::*member)[256];
};
struct DeclaredInt {
  const char* field;
  const char* variable;
  int Options::*member;
  int unset;
  long minimum, maximum;
  const char* accepts;
};
struct DeclaredReal {
  const char* field;
  const char* variable;
  double Options::*member;
  double unset, minimum;
  bool minimum_inclusive;
  double maximum;
  const char* accepts;
};
struct DeclaredText {
  const char* field;
  const char* variable;
  char (Options::*member)[PERSEUS_ENGINE_TEXT_CAPACITY];
  const char* accepts;
};

const std::vector<IdentityInt>& identity_ints() {
  static const std::vector<IdentityInt> rows = {
      {"rank", &Options::rank},           {"size", &Options::size},
      {"local_rank", &Options::local_rank}, {"local_size", &Options::local_size},
      {"node_rank", &Options::node_rank}, {"master_port", &Options::master_port},
      {"serve_store", &Options::serve_store}, {"stream_tuning", &Options::stream_tuning}};
  return rows;
}

const std::vector<IdentityText>& identity_texts() {
  static const std::vector<IdentityText> rows = {{"master_addr", &Options::master_addr},
                                                 {"hostname", &Options::hostname}};
  return rows;
}

#define PERSEUS_INT_ROW(field, variable, unset, minimum, maximum, accepts) \
  {#field, variable, &Options::field, unset, minimum, maximum, accepts},
#define PERSEUS_REAL_ROW(field, variable, unset, minimum, inclusive, maximum, accepts) \
  {#field, variable, &Options::field, unset, minimum, inclusive != 0, maximum, accepts},
#define PERSEUS_TEXT_ROW(field, variable, accepts) {#field, variable, &Options::field, accepts},

const std::vector<DeclaredInt>& declared_ints() {
  static const std::vector<DeclaredInt> rows = {PERSEUS_ENGINE_INT_OPTIONS(PERSEUS_INT_ROW)};
  return rows;
}
const std::vector<DeclaredReal>& declared_reals() {
  static const std::vector<DeclaredReal> rows = {PERSEUS_ENGINE_REAL_OPTIONS(PERSEUS_REAL_ROW)};
  return rows;
}
const std::vector<DeclaredText>& declared_texts() {
  static const std::vector<DeclaredText> rows = {PERSEUS_ENGINE_TEXT_OPTIONS(PERSEUS_TEXT_ROW)};
  return rows;
}

#undef PERSEUS_INT_ROW
#undef PERSEUS_REAL_ROW
#undef PERSEUS_TEXT_ROW

// ---- parsing: one rule per kind, the error in the declaration's words ----------------------------------------------

long parse_int(const std::string& name, const char* text, long lo, long hi, const char* accepts) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) {
    throw invalid_argument(name + "='" + text + "' is not valid: it accepts " + accepts);
  }
  return v;
}

double parse_real(const std::string& name, const char* text, const DeclaredReal& row) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text, &end);
  bool too_low = row.minimum_inclusive ? v < row.minimum : v <= row.minimum;
  if (errno != 0 || end == text || *end != '\0' || !std::isfinite(v) || too_low || v > row.maximum) {
    throw invalid_argument(name + "='" + text + "' is not valid: it accepts " + row.accepts);
  }
  return v;
}

void copy_text(char* dst, size_t cap, const char* src, const std::string& name) {
  if (std::strlen(src) >= cap) {
    throw invalid_argument(name + " is longer than " + std::to_string(cap - 1) + " characters");
  }
  std::strncpy(dst, src, cap);
}

// What setting an option implies beyond its field: a stream count someone chose is used as it is.
void after_set(Options* o, const char* field) {
  if (std::strcmp(field, "streams") == 0) o->stream_tuning = 0;
}

template <typename Row>
bool names(const Row& row, const std::string& name) {
  return name == row.field || name == row.variable;
}

// The name an error shows: the variable, as a user sets it, when the caller used the field's name.
template <typename Row>
std::string shown(const Row& row, const std::string& name) {
  return name == row.variable ? name : name + " (" + row.variable + ")";
}

std::string known_names() {
  std::string out;
  for (const auto& n : option_names()) out += (out.empty() ? "" : ", ") + std::string(n.field);
  return out;
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

const std::vector<OptionName>& option_names() {
  static const std::vector<OptionName> all = [] {
    std::vector<OptionName> out;
    for (const auto& r : identity_ints()) out.push_back({r.field, OptionKind::kInt, nullptr});
    for (const auto& r : identity_texts()) out.push_back({r.field, OptionKind::kText, nullptr});
    for (const auto& r : declared_ints()) out.push_back({r.field, OptionKind::kInt, r.variable});
    for (const auto& r : declared_reals()) out.push_back({r.field, OptionKind::kReal, r.variable});
    for (const auto& r : declared_texts()) out.push_back({r.field, OptionKind::kText, r.variable});
    return out;
  }();
  return all;
}

void default_options(Options* o) {
  std::memset(o, 0, sizeof(*o));
  o->rank = 0;
  o->size = 1;
  o->local_rank = 0;
  o->local_size = 1;
  o->node_rank = 0;
  std::strcpy(o->master_addr, "127.0.0.1");
  o->master_port = 0;
  o->serve_store = -1;  // automatic: rank 0 serves
  o->stream_tuning = 1;  // `streams` is an upper limit: the tuner measures 1 against it
  for (const auto& r : declared_ints()) o->*r.member = r.unset;
  for (const auto& r : declared_reals()) o->*r.member = r.unset;
  for (const auto& r : declared_texts()) (o->*r.member)[0] = '\0';  // the engine chooses
}

void options_from_env(Options* o) {
  // Names, ranges, defaults and the text an error shows come from the one declaration of the variables
  // (perseus/variables.h, generated from perseus.config), so the engine accepts exactly what the Python runtime
  // accepts and says so in the same words.
  for (const auto& r : declared_ints()) {
    if (Setting s = setting(r.variable); s.value != nullptr) {
      o->*r.member = int(parse_int(s.name, s.value, r.minimum, r.maximum, r.accepts));
      after_set(o, r.field);
    }
  }
  for (const auto& r : declared_reals()) {
    if (Setting s = setting(r.variable); s.value != nullptr) {
      o->*r.member = parse_real(s.name, s.value, r);
      after_set(o, r.field);
    }
  }
  for (const auto& r : declared_texts()) {
    if (Setting s = setting(r.variable); s.value != nullptr) {
      copy_text(o->*r.member, PERSEUS_ENGINE_TEXT_CAPACITY, s.value, s.name);
      after_set(o, r.field);
    }
  }
  if (o->iface[0] == '\0') {  // Gloo's own variable, when perseus's is unset
    if (const char* v = env("GLOO_SOCKET_IFNAME")) copy_text(o->iface, sizeof(o->iface), v, "GLOO_SOCKET_IFNAME");
  }
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
}

void set_option(Options* o, const std::string& name, const std::string& value) {
  const char* text = value.c_str();
  for (const auto& r : identity_ints()) {
    if (name == r.field) {
      o->*r.member = int(parse_int(name, text, INT_MIN, INT_MAX, "an integer"));  // validate_options checks ranges
      return;
    }
  }
  for (const auto& r : identity_texts()) {
    if (name == r.field) return copy_text(o->*r.member, sizeof(o->*r.member), text, name);
  }
  // An empty value means unset, as in the environment: the declared default, or the engine's automatic choice.
  for (const auto& r : declared_ints()) {
    if (names(r, name)) {
      o->*r.member = value.empty() ? r.unset : int(parse_int(shown(r, name), text, r.minimum, r.maximum, r.accepts));
      return after_set(o, r.field);
    }
  }
  for (const auto& r : declared_reals()) {
    if (names(r, name)) {
      o->*r.member = value.empty() ? r.unset : parse_real(shown(r, name), text, r);
      return after_set(o, r.field);
    }
  }
  for (const auto& r : declared_texts()) {
    if (names(r, name)) {
      copy_text(o->*r.member, PERSEUS_ENGINE_TEXT_CAPACITY, text, shown(r, name));
      return after_set(o, r.field);
    }
  }
  throw invalid_argument("unknown engine option '" + name + "': the options are " + known_names());
}

std::string option_text(const Options& o, const std::string& name) {
  for (const auto& r : identity_ints()) {
    if (name == r.field) return std::to_string(o.*r.member);
  }
  for (const auto& r : identity_texts()) {
    if (name == r.field) return o.*r.member;
  }
  for (const auto& r : declared_ints()) {
    if (names(r, name)) return std::to_string(o.*r.member);
  }
  for (const auto& r : declared_reals()) {
    if (names(r, name)) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.17g", o.*r.member);
      return buf;
    }
  }
  for (const auto& r : declared_texts()) {
    if (names(r, name)) return o.*r.member;
  }
  throw invalid_argument("unknown engine option '" + name + "': the options are " + known_names());
}

void validate_options(const Options& o) {
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
  if (o.stream_tuning < 0 || o.stream_tuning > 1) bad("stream_tuning must be 0 or 1");
  if (o.serve_store < -1 || o.serve_store > 1) bad("serve_store must be -1 (rank 0 serves), 0 or 1");
  // A declared option holds what its variable accepts, or its automatic value (unset, no declared default).
  for (const auto& r : declared_ints()) {
    int v = o.*r.member;
    bool automatic = r.unset < r.minimum && v == r.unset;
    if (!automatic && (v < r.minimum || v > r.maximum)) {
      bad(std::string(r.field) + " " + std::to_string(v) + " is not valid (" + r.variable + " accepts " + r.accepts + ")");
    }
  }
  for (const auto& r : declared_reals()) {
    double v = o.*r.member;
    bool too_low = r.minimum_inclusive ? v < r.minimum : v <= r.minimum;
    if (!std::isfinite(v) || too_low || v > r.maximum) {
      bad(std::string(r.field) + " " + std::to_string(v) + " is not valid (" + r.variable + " accepts " + r.accepts + ")");
    }
  }
  if (o.mode == 0 && o.wire_dtype == 2) {
    bad("PERSEUS_ALLREDUCE_MODE=0 (one level) cannot be combined with PERSEUS_ALLREDUCE_DTYPE=2, which needs two "
        "levels: unset PERSEUS_ALLREDUCE_MODE or set it to 1, or choose PERSEUS_ALLREDUCE_DTYPE 0 or 1");
  }
}

}  // namespace perseus::engine
