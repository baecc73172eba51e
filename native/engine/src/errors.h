// The engine's exceptions: each carries the perseus_engine_status the C ABI returns for it.
#pragma once

#include <stdexcept>
#include <string>

#include "perseus/engine.h"

namespace perseus::engine {

class EngineError : public std::runtime_error {
 public:
  EngineError(perseus_engine_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  perseus_engine_status status() const { return status_; }

 private:
  perseus_engine_status status_;
};

inline EngineError invalid_argument(const std::string& m) { return {PERSEUS_ENGINE_INVALID_ARGUMENT, m}; }
inline EngineError unsupported(const std::string& m) { return {PERSEUS_ENGINE_UNSUPPORTED, "not supported: " + m}; }

}  // namespace perseus::engine
