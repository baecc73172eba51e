#include "status.h"

#include "perseus/core.h"

namespace perseus {
namespace {
thread_local std::string g_last_error;
}

perseus_status fail(perseus_status status, const std::string& message) {
  g_last_error = message;
  return status;
}

perseus_status ok() {
  g_last_error.clear();
  return PERSEUS_OK;
}

}  // namespace perseus

extern "C" {

const char* perseus_last_error(void) { return perseus::g_last_error.c_str(); }

const char* perseus_status_string(perseus_status status) {
  switch (status) {
    case PERSEUS_OK:
      return "ok";
    case PERSEUS_ERR_INVALID_ARGUMENT:
      return "invalid argument";
    case PERSEUS_ERR_UNSUPPORTED:
      return "not supported";
    case PERSEUS_ERR_CUDA:
      return "CUDA error";
  }
  return "unknown status";
}

const char* perseus_core_version(void) { return PERSEUS_CORE_VERSION; }

int perseus_core_abi_version(void) { return PERSEUS_CORE_ABI_VERSION; }

}  // extern "C"
