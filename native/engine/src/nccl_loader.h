// NCCL, loaded at run time from libnccl.so.2 (PyPI's nvidia-nccl-cu12 installs it as
// site-packages/nvidia/nccl/lib/libnccl.so.2; see dl_search.h), compiled against that wheel's nccl.h. The
// engine's library never links or ships NCCL: it uses the copy the user's environment has (a framework's
// CUDA wheels depend on nvidia-nccl-cu12), so NCCL and the framework agree on one version.
#pragma once

#include <nccl.h>

#include <chrono>
#include <string>

#include "dl_search.h"

namespace perseus::engine {

class TcpStore;

class Nccl {
 public:
  // Loaded on the first call (once per process); never throws: see available() / why_not().
  static Nccl& get();

  bool available() const { return lib_.handle != nullptr && why_not_.empty(); }
  const std::string& why_not() const { return why_not_; }
  const std::string& path() const { return lib_.path; }
  int version() const { return version_; }  // ncclGetVersion: 22105 for 2.21.5

  // Throws EngineError(UNSUPPORTED) with why_not() unless available().
  void require() const;
  // Throws EngineError(COMMUNICATION) naming `what`, NCCL's error string and its last error.
  void check(ncclResult_t result, const char* what, ncclComm_t comm = nullptr) const;

  decltype(&ncclGetVersion) GetVersion = nullptr;
  decltype(&ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&ncclCommInitRank) CommInitRank = nullptr;
  decltype(&ncclCommDestroy) CommDestroy = nullptr;
  decltype(&ncclCommAbort) CommAbort = nullptr;
  decltype(&ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&ncclGetErrorString) GetErrorString = nullptr;
  decltype(&ncclGetLastError) GetLastError = nullptr;  // may be null (NCCL < 2.13)
  decltype(&ncclAllReduce) AllReduce = nullptr;
  decltype(&ncclBroadcast) Broadcast = nullptr;

 private:
  Nccl();
  Loaded lib_;
  std::string why_not_;
  int version_ = 0;
};

// The NCCL unique id of one communicator, through the engine's rendezvous store (a store is not a
// transport: it carries these 128 bytes once per communicator). The root rank creates it
// (ncclGetUniqueId) and publishes it under `key`, or publishes its error, which every rank then throws:
// all ranks fail with one message. The other ranks wait for the key up to `timeout`.
ncclUniqueId exchange_unique_id(TcpStore& store, const std::string& key, bool root, std::chrono::milliseconds timeout);

}  // namespace perseus::engine
