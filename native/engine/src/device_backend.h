// Collectives on CUDA device buffers. One channel per (device, Gloo group of a stream), created on the
// first device collective the stream runs, collectively (every rank reaches it in the agreed order):
//   NCCL:  when every rank of the group loaded NCCL, the core has its CUDA kernels, and no two ranks share
//          a GPU (same host and PCI bus id); the unique id travels through the engine's store.
//   Gloo:  otherwise (one GPU shared by several ranks, no libnccl.so.2): host staging with cudaMemcpy over
//          the stream's Gloo groups, the fp16 wire compressed on the device by the core's CUDA kernels.
// Every rank takes the same decision from what all ranks publish in the store.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tcp_store.h"
#include "wire.h"

namespace perseus::engine {

struct DeviceChannel;

struct DeviceJob {
  void* data = nullptr;  // device memory, in place
  int device = 0;
  int dtype = 0;         // perseus_engine_dtype
  uint64_t n = 0;
  bool allreduce = true; // else broadcast from `root`
  bool average = false;
  int root = 0;
};

// The interface NCCL's sockets should use, or "" to leave NCCL its own choice: NCCL_SOCKET_IFNAME when the user
// set it (never overridden); else PERSEUS_NCCL_NETWORK_INTERFACE when set (an interface this machine lacks
// throws, naming the variable); else the manual's default eth0 where this machine has an eth0.
// `exists` tells whether an interface name exists here.
std::string nccl_socket_interface(const char* nccl_socket_ifname, const char* perseus_interface,
                                  bool (*exists)(const std::string&));

class DeviceBackend {
 public:
  // store: a client of the engine's rendezvous store (null in a 1-rank job that serves none).
  DeviceBackend(std::unique_ptr<TcpStore> store, int rank, int size, std::chrono::milliseconds timeout);
  ~DeviceBackend();

  // Runs one collective on this stream's groups; returns non-finite results (nancheck) of an fp32
  // allreduce. Throws EngineError. `collectives` grows by the transport calls issued.
  uint64_t run(StreamGroups& groups, const WirePolicy& policy, const DeviceJob& job, bool nancheck,
               std::vector<uint16_t>& half, uint64_t& collectives);

 private:
  DeviceChannel& channel(int device, Group& group);
  // Waits for the channel's stream; over NCCL it polls, and past the timeout (or on NCCL's asynchronous error)
  // aborts the communicator (ncclCommAbort), so a rank lost inside a collective fails the others in time.
  void wait(DeviceChannel& ch);
  std::string decide(int device, Group& group, const std::string& key, std::string& why);

  std::unique_ptr<TcpStore> store_;
  int rank_, size_;
  std::chrono::milliseconds timeout_;
  std::map<std::pair<int, std::string>, std::unique_ptr<DeviceChannel>> channels_;
  std::map<std::string, int> generation_;  // channels made per group: the store keys' suffix
};

}  // namespace perseus::engine
