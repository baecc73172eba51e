#include "device_backend.h"

#include <net/if.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "cuda_loader.h"
#include "errors.h"
#include "negotiation.h"
#include "nccl_loader.h"
#include "perseus/core.h"
#include "perseus/engine.h"
#include "perseus/variables.h"
#include "tcp_store.h"

namespace perseus::engine {

struct DeviceChannel {
  int device = 0;
  bool nccl = false;
  std::string why_gloo;  // why Gloo carries this channel ("" for NCCL)
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  void* scratch = nullptr;
  uint64_t scratch_bytes = 0;
  unsigned long long* counter = nullptr;  // non-finite results, on the device
  // Gloo: the staging buffer, page-locked (cudaMallocHost) so that copies run at the link's speed (pageable
  // memory went at ~11 GB/s on an H100, pinned at ~54); pageable only when pinning is refused
  char* pinned = nullptr;
  uint64_t pinned_bytes = 0;
  std::vector<char> pageable;

  char* ensure_host(uint64_t bytes) {
    auto& rt = CudaRuntime::get();
    if (bytes <= pinned_bytes) return pinned;
    if (pageable.empty()) {
      if (pinned != nullptr) rt.FreeHost(pinned);
      pinned = nullptr;
      pinned_bytes = 0;
      void* fresh = nullptr;
      if (rt.MallocHost(&fresh, bytes) == cudaSuccess) {
        pinned = static_cast<char*>(fresh);
        pinned_bytes = bytes;
        return pinned;
      }
    }
    if (pageable.size() < bytes) pageable.resize(bytes);
    return pageable.data();
  }

  void* ensure_scratch(uint64_t bytes) {
    auto& rt = CudaRuntime::get();
    if (bytes <= scratch_bytes) return scratch;
    if (scratch != nullptr) rt.check(rt.Free(scratch), "cudaFree");
    scratch = nullptr;
    scratch_bytes = 0;
    rt.check(rt.Malloc(&scratch, bytes), "cudaMalloc (the engine's fp16 wire buffer)");
    scratch_bytes = bytes;
    return scratch;
  }

  ~DeviceChannel() {
    auto& rt = CudaRuntime::get();
    if (!rt.available()) return;
    int previous = -1;  // the destroying thread is the caller's (perseus_engine_destroy): keep its device
    rt.GetDevice(&previous);
    rt.SetDevice(device);
    if (comm != nullptr) Nccl::get().CommDestroy(comm);
    if (scratch != nullptr) rt.Free(scratch);
    if (counter != nullptr) rt.Free(counter);
    if (pinned != nullptr) rt.FreeHost(pinned);
    if (stream != nullptr) rt.StreamDestroy(stream);
    if (previous >= 0) rt.SetDevice(previous);
  }
};

namespace {

std::mutex g_channels_mu;

void core_check(perseus_status s) {
  if (s != PERSEUS_OK) throw EngineError(PERSEUS_ENGINE_COMMUNICATION, std::string("perseus core: ") + perseus_last_error());
}

ncclDataType_t nccl_type(int dtype) {
  switch (dtype) {
    case PERSEUS_ENGINE_FLOAT32: return ncclFloat32;
    case PERSEUS_ENGINE_FLOAT16: return ncclFloat16;
    case PERSEUS_ENGINE_BFLOAT16: return ncclBfloat16;
    case PERSEUS_ENGINE_FLOAT64: return ncclFloat64;
    case PERSEUS_ENGINE_INT32: return ncclInt32;
    case PERSEUS_ENGINE_INT64: return ncclInt64;
    default: return ncclUint8;
  }
}

std::string hostname() {
  char name[256] = {0};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

// The host path of a non-fp32 allreduce after the sum (as Engine::run_single): average of fp64 / fp16 / bf16.
void host_average(void* data, uint64_t n, int dtype, int size) {
  if (dtype == PERSEUS_ENGINE_FLOAT64) {
    auto* d = static_cast<double*>(data);
    for (uint64_t i = 0; i < n; ++i) d[i] /= double(size);
  } else if (dtype == PERSEUS_ENGINE_FLOAT16 || dtype == PERSEUS_ENGINE_BFLOAT16) {
    const auto half = dtype == PERSEUS_ENGINE_FLOAT16 ? PERSEUS_FLOAT16 : PERSEUS_BFLOAT16;
    std::vector<float> tmp(n);
    uint64_t nonfinite = 0;
    core_check(perseus_decompress(data, half, tmp.data(), n, 1.0f, size, &nonfinite));
    core_check(perseus_compress(tmp.data(), data, half, n, 1.0f, &nonfinite));
  }
}

bool interface_exists(const std::string& name) { return if_nametoindex(name.c_str()) != 0; }

}  // namespace

std::string nccl_socket_interface(const char* nccl_socket_ifname, const char* perseus_interface,
                                  bool (*exists)(const std::string&)) {
  if (nccl_socket_ifname != nullptr && *nccl_socket_ifname != '\0') return "";  // the user's own NCCL setting
  if (perseus_interface != nullptr && *perseus_interface != '\0') {
    const std::string wanted = perseus_interface;
    if (!exists(wanted)) {
      throw EngineError(PERSEUS_ENGINE_INVALID_ARGUMENT,
                        "PERSEUS_NCCL_NETWORK_INTERFACE=" + wanted + ": this machine has no such network interface "
                        "(ip -brief link lists them): name one of its interfaces, or unset it to let NCCL choose");
    }
    return wanted;
  }
  return exists(PERSEUS_DEFAULT_NCCL_NETWORK_INTERFACE) ? PERSEUS_DEFAULT_NCCL_NETWORK_INTERFACE : "";
}

void DeviceBackend::wait(DeviceChannel& ch) {
  auto& rt = CudaRuntime::get();
  if (!ch.nccl) {
    rt.check(rt.StreamSynchronize(ch.stream), "cudaStreamSynchronize");
    return;
  }
  Nccl& nccl = Nccl::get();
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  auto pause = std::chrono::microseconds(10);
  auto abort_channel = [&] {
    if (ch.comm != nullptr) nccl.CommAbort(ch.comm);
    ch.comm = nullptr;  // aborted: the engine stops (fail_collective); nothing is destroyed twice
  };
  while (true) {
    const cudaError_t state = rt.StreamQuery(ch.stream);
    if (state == cudaSuccess) return;
    if (state != cudaErrorNotReady) rt.check(state, "cudaStreamQuery");
    ncclResult_t async = ncclSuccess;
    nccl.CommGetAsyncError(ch.comm, &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      abort_channel();
      nccl.check(async, "an NCCL collective (asynchronous error; the communicator was aborted)");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      abort_channel();
      throw EngineError(PERSEUS_ENGINE_COMMUNICATION,
                        "an NCCL collective did not complete within GLOO_TIMEOUT_SECONDS=" +
                            std::to_string(timeout_.count() / 1000) +
                            ": a rank was lost (crashed or killed) or stopped answering; the NCCL communicator was "
                            "aborted (ncclCommAbort)");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(500));
  }
}

DeviceBackend::DeviceBackend(std::unique_ptr<TcpStore> store, int rank, int size, std::chrono::milliseconds timeout)
    : store_(std::move(store)), rank_(rank), size_(size), timeout_(timeout) {}

DeviceBackend::~DeviceBackend() = default;

std::string DeviceBackend::decide(int device, Group& group, const std::string& key, std::string& why) {
  auto& rt = CudaRuntime::get();
  Nccl& nccl = Nccl::get();
  char bus[64] = {0};
  rt.check(rt.DeviceGetPCIBusId(bus, sizeof(bus), device), "cudaDeviceGetPCIBusId");
  std::string mine = nccl.available() ? (perseus_has_cuda() ? "1" : "0this perseus core has no CUDA kernels")
                                      : "0" + nccl.why_not();
  const std::string where = hostname() + "/" + bus;
  if (group.size() == 1 || store_ == nullptr) {
    why = mine[0] == '1' ? "" : mine.substr(1);
    return mine[0] == '1' ? "nccl" : "gloo";
  }
  std::string value = where + "\n" + mine;
  store_->set(key + "/" + std::to_string(group.rank()), std::vector<char>(value.begin(), value.end()));
  std::map<std::string, int> seen;
  why.clear();
  for (int r = 0; r < group.size(); ++r) {
    auto v = store_->get(key + "/" + std::to_string(r), timeout_);
    std::string text(v.begin(), v.end());
    auto nl = text.find('\n');
    std::string place = text.substr(0, nl), status = nl == std::string::npos ? "0?" : text.substr(nl + 1);
    if (why.empty() && status[0] != '1') why = "rank " + std::to_string(r) + ": " + status.substr(1);
    auto [it, fresh] = seen.emplace(place, r);
    if (!fresh && why.empty()) {
      why = "ranks " + std::to_string(it->second) + " and " + std::to_string(r) + " share GPU " + place +
            " (NCCL needs one GPU per rank)";
    }
  }
  return why.empty() ? "nccl" : "gloo";
}

DeviceChannel& DeviceBackend::channel(int device, Group& group) {
  const auto id = std::make_pair(device, group.name());
  int generation = 0;
  {
    std::lock_guard<std::mutex> lock(g_channels_mu);
    auto it = channels_.find(id);
    if (it != channels_.end()) return *it->second;
    generation = generation_[group.name()]++;
  }
  auto& rt = CudaRuntime::get();
  auto ch = std::make_unique<DeviceChannel>();
  ch->device = device;
  rt.check(rt.StreamCreateWithFlags(&ch->stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  const std::string key = "perseus/device/" + group.name() + "/" + std::to_string(generation);
  ch->nccl = decide(device, group, key, ch->why_gloo) == "nccl";
  if (ch->nccl) {
    Nccl& nccl = Nccl::get();
    // NCCL reads NCCL_SOCKET_IFNAME when its bootstrap starts (ncclGetUniqueId on the root, the first
    // communicator elsewhere): set before either
    const std::string iface = nccl_socket_interface(std::getenv("NCCL_SOCKET_IFNAME"),
                                                    std::getenv(PERSEUS_ENV_NCCL_NETWORK_INTERFACE), &interface_exists);
    if (!iface.empty()) setenv("NCCL_SOCKET_IFNAME", iface.c_str(), 0);
    ncclUniqueId uid;
    if (group.size() == 1 || store_ == nullptr) {
      nccl.check(nccl.GetUniqueId(&uid), "ncclGetUniqueId");
    } else {
      uid = exchange_unique_id(*store_, key + "/nccl-id", group.rank() == 0, timeout_);
    }
    nccl.check(nccl.CommInitRank(&ch->comm, group.size(), uid, group.rank()), "ncclCommInitRank");
  }
  std::lock_guard<std::mutex> lock(g_channels_mu);
  auto& slot = channels_[id];
  slot = std::move(ch);
  return *slot;
}

uint64_t DeviceBackend::run(StreamGroups& groups, const WirePolicy& policy, const DeviceJob& job, bool nancheck,
                            std::vector<uint16_t>& half, uint64_t& collectives) {
  auto& rt = CudaRuntime::get();
  rt.check(rt.SetDevice(job.device), "cudaSetDevice");
  Group& everyone = *groups.everyone;
  DeviceChannel& ch = channel(job.device, everyone);
  Nccl& nccl = Nccl::get();
  const uint64_t bytes = job.n * dtype_size(job.dtype);
  const int64_t divisor = job.average ? size_ : 1;
  auto d2h = [&](void* host, const void* dev, uint64_t nb) {
    rt.check(rt.MemcpyAsync(host, dev, nb, cudaMemcpyDeviceToHost, ch.stream), "cudaMemcpyAsync (device to host)");
    wait(ch);
  };
  auto h2d = [&](void* dev, const void* host, uint64_t nb) {
    rt.check(rt.MemcpyAsync(dev, host, nb, cudaMemcpyHostToDevice, ch.stream), "cudaMemcpyAsync (host to device)");
  };
  uint64_t nonfinite = 0;
  if (job.n == 0) return 0;
  if (!job.allreduce) {
    if (ch.nccl) {
      nccl.check(nccl.Broadcast(job.data, job.data, bytes, ncclUint8, job.root, ch.comm, ch.stream), "ncclBroadcast", ch.comm);
    } else {
      char* host = ch.ensure_host(bytes);
      if (everyone.rank() == job.root) d2h(host, job.data, bytes);
      everyone.broadcast(host, bytes, job.root, job.dtype);
      if (everyone.rank() != job.root) h2d(job.data, host, bytes);
    }
    ++collectives;
  } else if (job.dtype == PERSEUS_ENGINE_FLOAT32 && !policy.hierarchical && policy.intra_fp16 && perseus_has_cuda()) {
    // the fp16 wire: compress on the device (the core's kernels), sum fp16, decompress on the device
    auto* wire = static_cast<uint16_t*>(ch.ensure_scratch(job.n * 2));
    if (nancheck && ch.counter == nullptr) {
      rt.check(rt.Malloc(reinterpret_cast<void**>(&ch.counter), sizeof(unsigned long long)), "cudaMalloc");
    }
    if (nancheck) rt.check(rt.MemsetAsync(ch.counter, 0, sizeof(unsigned long long), ch.stream), "cudaMemsetAsync");
    core_check(perseus_cuda_compress(static_cast<const float*>(job.data), wire, PERSEUS_FLOAT16, job.n, policy.scale,
                                     nullptr, ch.stream));
    if (ch.nccl) {
      nccl.check(nccl.AllReduce(wire, wire, job.n, ncclFloat16, ncclSum, ch.comm, ch.stream), "ncclAllReduce", ch.comm);
    } else {
      char* host = ch.ensure_host(job.n * 2);
      d2h(host, wire, job.n * 2);
      everyone.allreduce_sum(host, job.n, PERSEUS_ENGINE_FLOAT16);
      h2d(wire, host, job.n * 2);
    }
    ++collectives;
    core_check(perseus_cuda_decompress(wire, PERSEUS_FLOAT16, static_cast<float*>(job.data), job.n, policy.scale,
                                       divisor, nancheck ? ch.counter : nullptr, ch.stream));
    if (nancheck) {
      unsigned long long count = 0;
      d2h(&count, ch.counter, sizeof(count));
      nonfinite = count;
    }
  } else if (ch.nccl && !policy.hierarchical && !(job.dtype == PERSEUS_ENGINE_FLOAT32 && policy.intra_fp16)) {
    // fp32 wire or a 16/64-bit/integer tensor: NCCL sums it as it is (ncclAvg: NCCL's own rounding of the mean)
    nccl.check(nccl.AllReduce(job.data, job.data, job.n, nccl_type(job.dtype), job.average ? ncclAvg : ncclSum,
                              ch.comm, ch.stream), "ncclAllReduce", ch.comm);
    ++collectives;
    if (nancheck && job.dtype == PERSEUS_ENGINE_FLOAT32) {
      std::vector<float> copy(job.n);
      d2h(copy.data(), job.data, bytes);
      for (float v : copy) nonfinite += std::isfinite(v) ? 0 : 1;
    }
  } else {
    // host staging through the stream's Gloo groups, with the host path's wire policy (two levels included)
    char* host = ch.ensure_host(bytes);
    d2h(host, job.data, bytes);
    if (job.dtype == PERSEUS_ENGINE_FLOAT32) {
      nonfinite = allreduce_fp32(groups, policy, reinterpret_cast<float*>(host), job.n, divisor, nancheck,
                                 half, collectives);
    } else {
      everyone.allreduce_sum(host, job.n, job.dtype);
      ++collectives;
      if (job.average && size_ > 1) host_average(host, job.n, job.dtype, size_);
    }
    h2d(job.data, host, bytes);
  }
  wait(ch);
  return nonfinite;
}

}  // namespace perseus::engine
