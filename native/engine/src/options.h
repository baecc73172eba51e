// perseus_engine_options: defaults, the environment (PERSEUS_* and GLOO_TIMEOUT_SECONDS), validation.
#pragma once

#include <string>

#include "perseus/engine.h"

namespace perseus::engine {

// A PERSEUS_* variable as set: under its declared name, else under one of its aliases (the manual's
// spellings, PERSEUS_ENV_ALIASES); value nullptr when unset or empty. `name` is the spelling that was set.
struct Setting {
  const char* name;
  const char* value;
};
Setting setting(const char* declared_name);

void default_options(perseus_engine_options* o);
// Throws InvalidArgument naming the variable and what it accepts.
void options_from_env(perseus_engine_options* o);
// Throws InvalidArgument naming the field and the fix.
void validate_options(const perseus_engine_options& o);

}  // namespace perseus::engine
