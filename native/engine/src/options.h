// perseus_engine_options: defaults, the environment (PERSEUS_* and GLOO_TIMEOUT_SECONDS), validation.
#pragma once

#include <string>

#include "perseus/engine.h"

namespace perseus::engine {

void default_options(perseus_engine_options* o);
// Throws InvalidArgument naming the variable and what it accepts.
void options_from_env(perseus_engine_options* o);
// Throws InvalidArgument naming the field and the fix.
void validate_options(const perseus_engine_options& o);

}  // namespace perseus::engine
