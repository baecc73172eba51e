// perseus_engine_options: who this process is, and one field per engine option the PERSEUS_* declaration names
// (perseus/variables.h's PERSEUS_ENGINE_*_OPTIONS, generated); defaults, the environment, set/get by name, validation.
#pragma once

#include <string>
#include <vector>

#include "perseus/engine.h"
#include "perseus/variables.h"

#define PERSEUS_ENGINE_INT_FIELD(field, ...) int field;
#define PERSEUS_ENGINE_REAL_FIELD(field, ...) double field;
#define PERSEUS_ENGINE_TEXT_FIELD(field, ...) char field[PERSEUS_ENGINE_TEXT_CAPACITY];

struct perseus_engine_options {
  // Who this process is (the launcher's numbers; perseus.launch.detect() on the Python side).
  int rank, size, local_rank, local_size;
  int node_rank;  // ranks with equal node_rank form a node (two-level allreduce)
  char master_addr[256];
  int master_port;  // the rendezvous store's port (PERSEUS_MASTER_PORT)
  int serve_store;  // -1: rank 0 serves the store; 1: this process; 0: a launcher serves it
  char hostname[256];  // address this rank's Gloo pairs listen on when iface is ""; "" = automatic
  int stream_tuning;  // 1: measure 1 stream against `streams`, keep the fewest unless more are 3% faster; 0: fixed
  // What the variables set: wire_dtype, mode, gradient_scale, streams, fusion, nancheck, timeout_seconds, ...
  PERSEUS_ENGINE_INT_OPTIONS(PERSEUS_ENGINE_INT_FIELD)
  PERSEUS_ENGINE_REAL_OPTIONS(PERSEUS_ENGINE_REAL_FIELD)
  PERSEUS_ENGINE_TEXT_OPTIONS(PERSEUS_ENGINE_TEXT_FIELD)
};

#undef PERSEUS_ENGINE_INT_FIELD
#undef PERSEUS_ENGINE_REAL_FIELD
#undef PERSEUS_ENGINE_TEXT_FIELD

namespace perseus::engine {

// A PERSEUS_* variable as set: under its declared name, else under one of its aliases (the manual's
// spellings, PERSEUS_ENV_ALIASES); value nullptr when unset or empty. `name` is the spelling that was set.
struct Setting {
  const char* name;
  const char* value;
};
Setting setting(const char* declared_name);

enum class OptionKind { kInt = 0, kReal = 1, kText = 2 };

// One option as perseus_engine_option_name() lists it.
struct OptionName {
  const char* field;
  OptionKind kind;
  const char* variable;  // nullptr: a who-this-process-is field
};
const std::vector<OptionName>& option_names();

void default_options(perseus_engine_options* o);
// Throws InvalidArgument naming the variable and what it accepts.
void options_from_env(perseus_engine_options* o);
// By field or variable name, with the variable's rule; throws InvalidArgument naming the problem.
void set_option(perseus_engine_options* o, const std::string& name, const std::string& value);
std::string option_text(const perseus_engine_options& o, const std::string& name);
// Throws InvalidArgument naming the field and the fix.
void validate_options(const perseus_engine_options& o);

}  // namespace perseus::engine
