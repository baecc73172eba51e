// Error reporting of the C ABI: a status code plus a thread-local message naming the problem.
#pragma once

#include <string>

#include "perseus/core.h"

namespace perseus {

// Records `message` as perseus_last_error() of this thread and returns `status`.
perseus_status fail(perseus_status status, const std::string& message);
perseus_status ok();

}  // namespace perseus
