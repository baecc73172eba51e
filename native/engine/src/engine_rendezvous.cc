// Rendezvous: the store, Gloo's device, the node split and the Gloo groups of every stream; then the
// stream threads start.
#include <algorithm>
#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine.h"
#include "errors.h"
#include "gloo/transport/tcp/device.h"

namespace perseus::engine {

namespace {

// The local address on the route to the master: the address peers can reach this rank at.
std::string route_address(const std::string& master, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(master.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || res == nullptr) {
    throw EngineError(PERSEUS_ENGINE_COMMUNICATION, "cannot resolve MASTER_ADDR '" + master + "'");
  }
  std::string out;
  int fd = ::socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0) {  // UDP: no packet is sent
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    char text[INET6_ADDRSTRLEN] = {0};
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0 &&
        getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, text, sizeof(text), nullptr, 0, NI_NUMERICHOST) == 0) {
      out = text;
    }
  }
  if (fd >= 0) ::close(fd);
  freeaddrinfo(res);
  if (out.empty()) {
    throw EngineError(PERSEUS_ENGINE_COMMUNICATION,
                      "no route to MASTER_ADDR '" + master + "': set PERSEUS_GLOO_NETWORK_INTERFACE to the NIC to use");
  }
  return out;
}

std::vector<char> to_bytes(const std::string& s) { return {s.begin(), s.end()}; }


}  // namespace

// A write to a peer that closed raises SIGPIPE in the writing thread, which kills a host program that
// does not ignore it (Python does; a C++ host may not). The engine's threads (and Gloo's device loop,
// created by a thread with this mask) block it: the write fails with EPIPE and the collective reports it.
void block_sigpipe(sigset_t* previous) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, previous);
}

void Engine::rendezvous() {
  const auto timeout = std::chrono::milliseconds(int64_t(options_.timeout_seconds) * 1000);
  const int rank = options_.rank, size = options_.size;
  const bool serve = options_.serve_store == 1 || (options_.serve_store == -1 && rank == 0);
  try {
    if (size > 1 || serve) {
      if (serve) server_ = std::make_unique<TcpStoreServer>("", options_.master_port);
      store_ = std::make_unique<TcpStore>(options_.master_addr, server_ ? server_->port() : options_.master_port, timeout);
    }
    gloo::transport::tcp::attr attr;
    if (options_.iface[0] != '\0') {
      attr.iface = options_.iface;
    } else if (options_.hostname[0] != '\0') {
      attr.hostname = options_.hostname;
    } else {
      attr.hostname = size > 1 ? route_address(options_.master_addr, options_.master_port) : "127.0.0.1";
    }
    sigset_t previous;
    block_sigpipe(&previous);  // Gloo's loop thread starts here and inherits the mask
    device_ = gloo::transport::tcp::CreateDevice(attr);
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  } catch (const EngineError&) {
    throw;
  } catch (const std::exception& e) {
    throw EngineError(PERSEUS_ENGINE_COMMUNICATION, std::string("perseus engine rendezvous: ") + e.what());
  }

  // Node split: every rank publishes its node number; nodes are numbered by their lowest rank.
  std::vector<int> node_of(size_t(size), 0);
  try {
    if (size > 1) {
      store_->set("perseus/node/" + std::to_string(rank), to_bytes(std::to_string(options_.node_rank)));
      std::vector<std::string> keys;
      for (int r = 0; r < size; ++r) keys.push_back("perseus/node/" + std::to_string(r));
      store_->wait(keys, timeout);
      std::map<std::string, int> numbering;
      for (int r = 0; r < size; ++r) {
        auto v = store_->get(keys[size_t(r)]);
        std::string key(v.begin(), v.end());
        auto it = numbering.emplace(key, int(numbering.size())).first;
        node_of[size_t(r)] = it->second;
      }
    }
  } catch (const std::exception& e) {
    throw EngineError(PERSEUS_ENGINE_COMMUNICATION, std::string("perseus engine rendezvous (node split): ") + e.what());
  }
  node_ = node_of[size_t(rank)];
  num_nodes_ = *std::max_element(node_of.begin(), node_of.end()) + 1;
  std::vector<int> members, leaders;
  int largest = 0, smallest = size;
  for (int n = 0; n < num_nodes_; ++n) {
    int count = 0;
    for (int r = 0; r < size; ++r) {
      if (node_of[size_t(r)] != n) continue;
      if (count == 0) leaders.push_back(r);
      if (n == node_) members.push_back(r);
      ++count;
    }
    largest = std::max(largest, count);
    smallest = std::min(smallest, count);
  }
  local_rank_ = int(std::find(members.begin(), members.end(), rank) - members.begin());
  local_size_ = int(members.size());
  policy_ = wire_policy(options_.wire_dtype, options_.mode, options_.gradient_scale, num_nodes_, largest);

  try {
    auto& store = *store_;
    control_ = std::make_unique<Group>("perseus/control", rank, size, store, device_, timeout);
    for (int s = 0; s < options_.streams; ++s) {
      auto stream = std::make_unique<Stream>();
      stream->index = s;
      std::string base = "perseus/stream" + std::to_string(s);
      stream->groups.everyone = std::make_unique<Group>(base + "/all", rank, size, store, device_, timeout);
      if (policy_.hierarchical) {
        stream->groups.node = std::make_unique<Group>(base + "/node" + std::to_string(node_), local_rank_,
                                                      local_size_, store, device_, timeout);
        stream->groups.node_bcast = std::make_unique<Group>(base + "/node" + std::to_string(node_) + "/bcast",
                                                            local_rank_, local_size_, store, device_, timeout);
        stream->groups.node_leader = 0;
        if (smallest == largest) {  // equal nodes: every local rank carries a part between the nodes
          stream->groups.peers = std::make_unique<Group>(base + "/peers" + std::to_string(local_rank_), node_,
                                                         num_nodes_, store, device_, timeout);
        } else if (local_rank_ == 0) {
          int leader_rank = int(std::find(leaders.begin(), leaders.end(), rank) - leaders.begin());
          stream->groups.leaders = std::make_unique<Group>(base + "/leaders", leader_rank, int(leaders.size()),
                                                           store, device_, timeout);
        }
      }
      if (!options_.shm_disable) {  // the groups inside one node; each falls back to TCP on its own
        for (Group* g : stream->groups.inside_node(num_nodes_ == 1)) {
          if (g != nullptr) g->share_memory();
        }
      }
      streams_.push_back(std::move(stream));
    }
    control_->barrier();  // every rank connected every group
  } catch (const std::exception& e) {
    throw EngineError(PERSEUS_ENGINE_COMMUNICATION,
                      std::string("perseus engine rendezvous (connecting Gloo groups): ") + e.what() +
                          ". A rank did not arrive within GLOO_TIMEOUT_SECONDS=" +
                          std::to_string(options_.timeout_seconds) +
                          ", or the address peers use for this rank is wrong: set PERSEUS_GLOO_NETWORK_INTERFACE");
  }
  tuner_ = std::make_unique<StreamTuner>(options_.streams, options_.stream_tuning != 0 && size > 1);
  for (auto& s : streams_) {
    s->pipeline = make_pipeline(*s);
    Stream* raw = s.get();
    s->thread = std::thread([this, raw] {
      block_sigpipe();
      stream_loop(*raw);
    });
  }
}

}  // namespace perseus::engine
