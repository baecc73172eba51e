#include "nccl_loader.h"

#include <cstring>
#include <dlfcn.h>

#include "errors.h"
#include "perseus/variables.h"
#include "tcp_store.h"

namespace perseus::engine {

Nccl& Nccl::get() {
  static Nccl* nccl = new Nccl();  // never destroyed: communicators may outlive static destruction
  return *nccl;
}

Nccl::Nccl() {
  lib_ = load_nvidia_library(PERSEUS_ENV_NCCL_LIBRARY, {"nccl"}, {"libnccl.so.2"});
  if (lib_.handle == nullptr) {
    std::string tried;
    for (const auto& t : lib_.tried) tried += (tried.empty() ? "" : "; ") + t;
    why_not_ = "NCCL (libnccl.so.2) not found (tried: " + tried +
               "): pip install nvidia-nccl-cu12 (the package a framework's CUDA 12 wheels depend on), or set "
               "PERSEUS_NCCL_LIBRARY to a libnccl.so.2";
    return;
  }
  try {
#define PERSEUS_NCCL_SYMBOL(field, name) field = reinterpret_cast<decltype(field)>(symbol(lib_, #name))
    PERSEUS_NCCL_SYMBOL(GetVersion, ncclGetVersion);
    PERSEUS_NCCL_SYMBOL(GetUniqueId, ncclGetUniqueId);
    PERSEUS_NCCL_SYMBOL(CommInitRank, ncclCommInitRank);
    PERSEUS_NCCL_SYMBOL(CommDestroy, ncclCommDestroy);
    PERSEUS_NCCL_SYMBOL(CommAbort, ncclCommAbort);
    PERSEUS_NCCL_SYMBOL(CommGetAsyncError, ncclCommGetAsyncError);
    PERSEUS_NCCL_SYMBOL(GetErrorString, ncclGetErrorString);
    PERSEUS_NCCL_SYMBOL(AllReduce, ncclAllReduce);
    PERSEUS_NCCL_SYMBOL(Broadcast, ncclBroadcast);
#undef PERSEUS_NCCL_SYMBOL
    GetLastError = reinterpret_cast<decltype(GetLastError)>(dlsym(lib_.handle, "ncclGetLastError"));
    ncclResult_t r = GetVersion(&version_);
    if (r != ncclSuccess) why_not_ = lib_.path + ": ncclGetVersion failed: " + GetErrorString(r);
  } catch (const std::exception& e) {
    why_not_ = e.what();
  }
}

void Nccl::require() const {
  if (!available()) throw unsupported(why_not_);
}

void Nccl::check(ncclResult_t result, const char* what, ncclComm_t comm) const {
  if (result == ncclSuccess) return;
  std::string message = std::string("perseus engine: ") + what + " failed: " + GetErrorString(result);
  const char* last = GetLastError != nullptr ? GetLastError(comm) : nullptr;
  if (last != nullptr && *last != '\0') message += " (" + std::string(last) + ")";
  message += ". NCCL_DEBUG=WARN prints NCCL's own account";
  throw EngineError(result == ncclInvalidArgument || result == ncclInvalidUsage ? PERSEUS_ENGINE_INVALID_ARGUMENT
                                                                                 : PERSEUS_ENGINE_COMMUNICATION,
                    message);
}

ncclUniqueId exchange_unique_id(TcpStore& store, const std::string& key, bool root, std::chrono::milliseconds timeout) {
  static const std::string kOk = "id:", kError = "error:";
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (root) {
    std::string error;
    try {
      Nccl& nccl = Nccl::get();
      nccl.require();
      nccl.check(nccl.GetUniqueId(&id), "ncclGetUniqueId");
    } catch (const std::exception& e) {
      error = e.what();
    }
    std::vector<char> value;
    if (error.empty()) {
      value.assign(kOk.begin(), kOk.end());
      value.insert(value.end(), id.internal, id.internal + sizeof(id.internal));
    } else {
      value.assign(kError.begin(), kError.end());
      value.insert(value.end(), error.begin(), error.end());
    }
    store.set(key, value);
    if (!error.empty()) throw EngineError(PERSEUS_ENGINE_COMMUNICATION, error);
    return id;
  }
  std::vector<char> value = store.get(key, timeout);
  std::string head(value.begin(), value.begin() + std::min(value.size(), kError.size()));
  if (head.rfind(kError, 0) == 0) {
    throw EngineError(PERSEUS_ENGINE_COMMUNICATION, std::string(value.begin() + long(kError.size()), value.end()));
  }
  if (value.size() != kOk.size() + sizeof(id.internal) || head.rfind(kOk, 0) != 0) {
    throw EngineError(PERSEUS_ENGINE_COMMUNICATION, "perseus engine: the NCCL unique id under '" + key +
                                                        "' is corrupt: every rank must load the same perseus engine build");
  }
  std::memcpy(id.internal, value.data() + kOk.size(), sizeof(id.internal));
  return id;
}

}  // namespace perseus::engine
