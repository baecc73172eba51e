#include "engine.h"

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <cstring>
#include <limits>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "errors.h"
#include "gloo/common/error.h"
#include "gloo/transport/tcp/device.h"
#include "perseus/core.h"
#include "plan.h"

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

// A write to a peer that closed raises SIGPIPE in the writing thread, which kills a host program that
// does not ignore it (Python does; a C++ host may not). The engine's threads (and Gloo's device loop,
// created by a thread with this mask) block it: the write fails with EPIPE and the collective reports it.
void block_sigpipe(sigset_t* previous = nullptr) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, previous);
}

}  // namespace

// ---- Op -----------------------------------------------------------------------------------------

void Op::finish(perseus_engine_status s, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (done) return;
    if (status == PERSEUS_ENGINE_OK && s != PERSEUS_ENGINE_OK) {
      status = s;
      error = message;
    }
    done = true;
  }
  cv.notify_all();
}

void Op::part_done(perseus_engine_status s, const std::string& message) {
  if (s != PERSEUS_ENGINE_OK) {
    std::lock_guard<std::mutex> lock(mu);
    if (status == PERSEUS_ENGINE_OK) {
      status = s;
      error = message;
    }
  }
  if (parts_left.fetch_sub(1) == 1) finish(PERSEUS_ENGINE_OK, "");
}

// ---- set-up -------------------------------------------------------------------------------------

Engine::Engine(const perseus_engine_options& options) : options_(options), table_(options.size) {
  if (options_.offline_neg) learner_ = std::make_unique<PlanLearner>();
  rendezvous();
  negotiator_ = std::thread([this] {
    block_sigpipe();
    negotiate_loop();
  });
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
  int largest = 0;
  for (int n = 0; n < num_nodes_; ++n) {
    int count = 0;
    for (int r = 0; r < size; ++r) {
      if (node_of[size_t(r)] != n) continue;
      if (count == 0) leaders.push_back(r);
      if (n == node_) members.push_back(r);
      ++count;
    }
    largest = std::max(largest, count);
  }
  local_rank_ = int(std::find(members.begin(), members.end(), rank) - members.begin());
  local_size_ = int(members.size());
  policy_ = wire_policy(options_.wire_dtype, options_.mode, options_.gradient_scale, num_nodes_, largest);

  try {
    auto& store = *store_;
    control_ = std::make_unique<Group>("perseus/control", rank, size, store, device_, timeout);
    for (int s = 0; s < options_.streams; ++s) {
      auto stream = std::make_unique<Stream>();
      std::string base = "perseus/stream" + std::to_string(s);
      stream->groups.everyone = std::make_unique<Group>(base + "/all", rank, size, store, device_, timeout);
      if (policy_.hierarchical) {
        stream->groups.node = std::make_unique<Group>(base + "/node" + std::to_string(node_), local_rank_,
                                                      local_size_, store, device_, timeout);
        stream->groups.node_leader = 0;
        if (local_rank_ == 0) {
          int leader_rank = int(std::find(leaders.begin(), leaders.end(), rank) - leaders.begin());
          stream->groups.leaders = std::make_unique<Group>(base + "/leaders", leader_rank, int(leaders.size()),
                                                           store, device_, timeout);
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
    Stream* raw = s.get();
    s->thread = std::thread([this, raw] {
      block_sigpipe();
      stream_loop(*raw);
    });
  }
}

Engine::~Engine() {
  try {
    shutdown();
  } catch (...) {
  }
}

// ---- submission ---------------------------------------------------------------------------------

int64_t Engine::submit(Request request, void* data, const void* input) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!offline_abort_.empty()) throw EngineError(PERSEUS_ENGINE_MISMATCH, offline_abort_);
  if (!failure_.empty()) throw EngineError(PERSEUS_ENGINE_COMMUNICATION, "perseus engine is broken: " + failure_);
  if (shutdown_requested_ || stopped_) {
    throw EngineError(PERSEUS_ENGINE_SHUT_DOWN, "perseus engine: '" + request.name + "' submitted after shutdown");
  }
  if (in_flight_names_.count(request.name)) {
    throw invalid_argument("perseus engine: a collective named '" + request.name +
                           "' is already in flight on this rank: wait for it, or give each collective a unique name");
  }
  auto op = std::make_shared<Op>();
  op->request = std::move(request);
  op->data = data;
  op->input = input;
  int64_t handle = next_handle_++;
  handles_[handle] = op;
  in_flight_names_[op->request.name] = handle;
  submitted_.push_back(op);
  submitted_cv_.notify_one();
  return handle;
}

std::shared_ptr<Op> Engine::find(int64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = handles_.find(handle);
  if (it == handles_.end()) throw invalid_argument("perseus engine: unknown handle " + std::to_string(handle));
  return it->second;
}

void Engine::release(int64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = handles_.find(handle);
  if (it == handles_.end()) throw invalid_argument("perseus engine: unknown handle " + std::to_string(handle));
  {
    std::lock_guard<std::mutex> op_lock(it->second->mu);
    if (!it->second->done) {
      throw invalid_argument("perseus engine: handle " + std::to_string(handle) +
                             " is still running: wait for it before releasing it");
    }
  }
  handles_.erase(it);
}

// ---- negotiation --------------------------------------------------------------------------------

void Engine::negotiate_loop() {
  const auto cycle = std::chrono::microseconds(int64_t(options_.cycle_ms * 1000));
  // Eager cycles: while collectives this rank announced wait for other ranks, the next allgather starts at
  // once instead of after a cycle. It then waits in Gloo for the others' next cycle, which a late rank
  // starts the moment it submits: the collective is agreed one round trip after the last submission
  // rather than up to a cycle later. Bounded, so that ranks waiting for each other do not spin.
  constexpr int kMaxEagerCycles = 64;
  int eager_streak = 0;
  while (true) {
    if (offline_) {
      if (!offline_cycle()) break;
      continue;
    }
    Announcement mine;
    {
      std::unique_lock<std::mutex> lock(mu_);
      const bool eager = !announced_.empty() && eager_streak < kMaxEagerCycles;
      eager_streak = eager ? eager_streak + 1 : 0;
      if (!eager) submitted_cv_.wait_for(lock, cycle, [&] { return !submitted_.empty() || shutdown_requested_; });
      for (auto& op : submitted_) {
        mine.requests.push_back(op->request);
        announced_[op->request.name] = op;
      }
      submitted_.clear();
      mine.shutdown = shutdown_requested_;
    }
    if (options_.rank == 0) mine.aborts = stalled();
    std::vector<std::vector<char>> all;
    std::vector<std::string> aborts;
    int shutdown_by = -1;
    try {
      all = control_->allgather_bytes(encode(mine));
      ++cycles_;
      for (int r = 0; r < options_.size; ++r) {
        Announcement a = decode(all[size_t(r)]);
        if (a.shutdown && shutdown_by < 0) shutdown_by = r;
        if (r == 0) aborts = a.aborts;
        for (const auto& req : a.requests) table_.add(r, req);
      }
    } catch (const std::exception& e) {
      std::string msg = std::string("negotiation with the other ranks failed: ") + e.what() +
                        ". A rank was lost (crashed or killed) or stopped answering for GLOO_TIMEOUT_SECONDS=" +
                        std::to_string(options_.timeout_seconds);
      set_failure(msg);
      fail_pending(PERSEUS_ENGINE_COMMUNICATION, "perseus engine: " + msg);
      break;
    }
    auto ready = table_.take_ready();
    if (!ready.empty()) eager_streak = 0;
    if (learner_ && !ready.empty()) learner_->add_cycle(ready);
    dispatch(ready);
    apply_aborts(aborts);  // after take_ready: a collective that completed this cycle is not aborted
    if (shutdown_by >= 0) {
      std::string who = shutdown_by == options_.rank ? "this rank" : "rank " + std::to_string(shutdown_by);
      fail_pending(PERSEUS_ENGINE_SHUT_DOWN,
                   "perseus engine: " + who + " shut its engine down before every rank submitted this collective");
      break;
    }
    // every rank sees the same agreements, table and aborts: all switch in this same cycle
    std::vector<PlanBatch> plan;
    if (learner_ && aborts.empty() && table_.pending() == 0 && learner_->try_finish(&plan)) {
      offline_ = std::make_unique<OfflinePlan>(std::move(plan), options_.rank);
      plan_collectives_ = int(offline_->collectives());
      offline_active_ = true;
      learner_.reset();
    }
  }
  for (auto& s : streams_) {
    {
      std::lock_guard<std::mutex> lock(s->mu);
      s->stop = true;
    }
    s->cv.notify_all();
  }
}

void Engine::dispatch(std::vector<Agreed>& ready) {
  if (tuner_->decision_due()) agree_streams();
  // fp32 allreduces of this cycle are fused per reduce op; everything else runs alone
  std::vector<std::shared_ptr<Op>> fuse[2];
  for (auto& agreed : ready) {
    std::shared_ptr<Op> op;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = announced_.find(agreed.name);
      if (it == announced_.end()) continue;  // cannot happen: every rank announced it, this one too
      op = it->second;
      announced_.erase(it);
      in_flight_names_.erase(agreed.name);
    }
    if (!agreed.mismatch.empty()) {
      op->finish(PERSEUS_ENGINE_MISMATCH, "perseus engine: " + agreed.mismatch);
      continue;
    }
    const Request& r = op->request;
    if (r.device >= 0) {  // a CUDA device buffer (engine_device.cc): stream 0 only, so one NCCL communicator per
      enqueue([this, op](Stream& s) { run_device(s, op); }, 1);  // device runs them in the agreed order
      continue;
    }
    if (r.kind == Kind::kAllreduce && r.dtype == PERSEUS_ENGINE_FLOAT32) {
      fuse[r.op == PERSEUS_ENGINE_AVERAGE ? 1 : 0].push_back(op);
      continue;
    }
    auto shared = std::make_shared<Agreed>(std::move(agreed));
    enqueue([this, op, shared](Stream& s) { run_single(s, op, *shared); }, tuner_->active());
  }
  struct Group {
    std::shared_ptr<std::vector<Unit>> units;
    std::shared_ptr<std::vector<std::shared_ptr<Op>>> ops;
    int reduce_op;
    uint64_t bytes;
  };
  std::vector<Group> fused;
  uint64_t total = 0;
  for (int reduce_op = 0; reduce_op < 2; ++reduce_op) {
    auto& ops = fuse[reduce_op];
    if (ops.empty()) continue;
    std::vector<uint64_t> numels;
    for (auto& op : ops) numels.push_back(numel(op->request.shape));
    std::vector<std::vector<Unit>> groups;
    try {
      groups = plan_fusion(numels, 4, options_.fusion);
    } catch (const std::exception& e) {
      for (auto& op : ops) op->finish(PERSEUS_ENGINE_INVALID_ARGUMENT, std::string("perseus engine: ") + e.what());
      continue;
    }
    for (auto& op : ops) op->parts_left = 0;
    for (auto& g : groups) {
      for (auto& u : g) ++ops[u.tensor]->parts_left;
    }
    for (auto& op : ops) {
      if (op->parts_left == 0) op->finish(PERSEUS_ENGINE_OK, "");  // an empty tensor
    }
    auto group_ops = std::make_shared<std::vector<std::shared_ptr<Op>>>(ops);
    for (auto& g : groups) {
      if (g.empty()) continue;
      uint64_t bytes = 0;
      for (const auto& u : g) bytes += u.numel * 4;
      fused.push_back(Group{std::make_shared<std::vector<Unit>>(g), group_ops, reduce_op, bytes});
      total += bytes;
    }
  }
  if (fused.empty()) return;
  const StreamTuner::Slot slot = tuner_->on_dispatch(total);
  for (auto& g : fused) {
    tuner_->group_started(slot.tag, g.bytes);
    enqueue([this, g, tag = slot.tag](Stream& s) {
      run_allreduce_fp32(s, *g.ops, *g.units, g.reduce_op);
      tuner_->group_done(tag);
    }, slot.streams);
  }
}

void Engine::enqueue(std::function<void(Stream&)> task, int streams) {
  // every rank issues the same tasks with the same counts: the same stream for each
  Stream& s = *streams_[next_stream_ % size_t(streams)];
  ++next_stream_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.queue.push_back([task, &s] { task(s); });
  }
  s.cv.notify_one();
}

std::vector<std::string> Engine::stalled() {
  const auto now = std::chrono::steady_clock::now();
  const auto limit = std::chrono::seconds(options_.timeout_seconds);
  std::vector<std::string> pending = table_.pending_names(), out;
  std::map<std::string, std::chrono::steady_clock::time_point> kept;
  for (const auto& name : pending) {
    auto it = first_seen_.find(name);
    auto seen = it == first_seen_.end() ? now : it->second;
    if (now - seen > limit) {
      out.push_back(name);
    } else {
      kept[name] = seen;
    }
  }
  first_seen_ = std::move(kept);
  return out;
}

void Engine::apply_aborts(const std::vector<std::string>& names) {
  for (const auto& name : names) {
    std::string message = table_.abort(name, options_.timeout_seconds);
    if (message.empty()) continue;
    std::shared_ptr<Op> op;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = announced_.find(name);
      if (it != announced_.end()) {
        op = it->second;
        announced_.erase(it);
        in_flight_names_.erase(name);
      }
    }
    if (op) op->finish(PERSEUS_ENGINE_MISMATCH, "perseus engine: " + message);
  }
}

// ---- execution ----------------------------------------------------------------------------------

void Engine::stream_loop(Stream& s) {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(s.mu);
      s.cv.wait(lock, [&] { return s.stop || !s.queue.empty(); });
      if (s.queue.empty()) return;  // stopping and drained
      task = std::move(s.queue.front());
      s.queue.pop_front();
    }
    task();
  }
}

std::string Engine::collective_error(const Request& r, const std::string& what) const {
  return "perseus engine: " + describe(r) + " '" + r.name + "' failed on rank " + std::to_string(options_.rank) +
         ": " + what + ". A rank was lost (crashed or killed) or did not reach this collective within "
         "GLOO_TIMEOUT_SECONDS=" + std::to_string(options_.timeout_seconds);
}

void Engine::run_allreduce_fp32(Stream& s, const std::vector<std::shared_ptr<Op>>& ops,
                                const std::vector<Unit>& units, int reduce_op) {
  std::string broken = failure();
  if (!broken.empty()) {
    std::string deviation = abort_after_failure();
    for (const auto& u : units) {
      ops[u.tensor]->part_done(deviation.empty() ? PERSEUS_ENGINE_COMMUNICATION : PERSEUS_ENGINE_MISMATCH,
                               deviation.empty() ? "perseus engine is broken: " + broken : deviation);
    }
    return;
  }
  const Unit& first = units[0];
  const bool in_place = units.size() == 1 && first.offset == 0 && first.numel == numel(ops[first.tensor]->request.shape);
  uint64_t n = 0;
  for (const auto& u : units) n += u.numel;
  float* payload = nullptr;
  if (in_place) {
    payload = static_cast<float*>(ops[first.tensor]->data);
  } else {
    if (s.fusion.size() < n) s.fusion.resize(n);
    payload = s.fusion.data();
    uint64_t at = 0;
    for (const auto& u : units) {
      std::memcpy(payload + at, static_cast<float*>(ops[u.tensor]->data) + u.offset, u.numel * 4);
      at += u.numel;
    }
    ++fused_groups_;
  }
  perseus_engine_status status = PERSEUS_ENGINE_OK;
  std::string message;
  try {
    uint64_t issued = 0;
    const int64_t divisor = reduce_op == PERSEUS_ENGINE_AVERAGE ? options_.size : 1;
    uint64_t nonfinite = allreduce_fp32(s.groups, policy_, payload, n, divisor, options_.nancheck != 0, s.half, issued);
    collectives_ += issued;
    if (options_.nancheck && nonfinite > 0) {
      std::string names;
      for (const auto& u : units) {
        const std::string& nm = ops[u.tensor]->request.name;
        if (names.find("'" + nm + "'") == std::string::npos) names += (names.empty() ? "'" : ", '") + nm + "'";
      }
      status = PERSEUS_ENGINE_NONFINITE;
      message = "PERSEUS_ALLREDUCE_NANCHECK: the reduced result of " + names + " is not finite (inf or NaN) in " +
                std::to_string(nonfinite) + " element(s). A loss that grows too large can overflow fp16 after the "
                "gradient scale: lower PERSEUS_ALLREDUCE_GRADIENT_SCALE or find the layer that produces it";
    }
  } catch (const std::exception& e) {
    status = PERSEUS_ENGINE_COMMUNICATION;
    message = collective_error(ops[first.tensor]->request, e.what());
    std::string deviation = abort_after_failure();
    if (!deviation.empty()) {
      status = PERSEUS_ENGINE_MISMATCH;
      message = deviation;
    }
    set_failure(message);
  }
  if (!in_place) {
    uint64_t at = 0;
    for (const auto& u : units) {
      std::memcpy(static_cast<float*>(ops[u.tensor]->data) + u.offset, payload + at, u.numel * 4);
      at += u.numel;
    }
  }
  for (const auto& u : units) ops[u.tensor]->part_done(status, message);
}

void Engine::run_single(Stream& s, const std::shared_ptr<Op>& op, const Agreed& agreed) {
  std::string broken = failure();
  if (!broken.empty()) {
    std::string deviation = abort_after_failure();
    op->finish(deviation.empty() ? PERSEUS_ENGINE_COMMUNICATION : PERSEUS_ENGINE_MISMATCH,
               deviation.empty() ? "perseus engine is broken: " + broken : deviation);
    return;
  }
  const Request& r = op->request;
  Group& everyone = *s.groups.everyone;
  const size_t es = dtype_size(r.dtype);
  const uint64_t n = numel(r.shape);
  try {
    switch (r.kind) {
      case Kind::kAllreduce: {
        everyone.allreduce_sum(op->data, n, r.dtype);
        ++collectives_;
        if (r.op == PERSEUS_ENGINE_AVERAGE && options_.size > 1) {
          if (r.dtype == PERSEUS_ENGINE_FLOAT64) {
            auto* d = static_cast<double*>(op->data);
            for (uint64_t i = 0; i < n; ++i) d[i] /= double(options_.size);
          } else {  // fp16 / bf16: through fp32, one rounding
            const auto half = r.dtype == PERSEUS_ENGINE_FLOAT16 ? PERSEUS_FLOAT16 : PERSEUS_BFLOAT16;
            std::vector<float> tmp(n);
            uint64_t nonfinite = 0;
            perseus_decompress(op->data, half, tmp.data(), n, 1.0f, options_.size, &nonfinite);
            perseus_compress(tmp.data(), op->data, half, n, 1.0f, &nonfinite);
          }
        }
        break;
      }
      case Kind::kBroadcast:
        everyone.broadcast(op->data, n * es, r.root, r.dtype);
        ++collectives_;
        break;
      case Kind::kAllgather: {
        std::vector<uint64_t> bytes;
        uint64_t total = 0;
        for (const auto& pr : agreed.per_rank) {
          op->first_dims.push_back(pr.shape[0]);
          bytes.push_back(numel(pr.shape) * es);
          total += bytes.back();
        }
        op->gathered.resize(total);
        everyone.allgatherv(op->input, total ? op->gathered.data() : nullptr, bytes);
        ++collectives_;
        break;
      }
      case Kind::kBarrier:
        everyone.barrier();
        ++collectives_;
        break;
    }
  } catch (const std::exception& e) {
    std::string message = collective_error(r, e.what());
    std::string deviation = abort_after_failure();
    set_failure(deviation.empty() ? message : deviation);
    op->finish(deviation.empty() ? PERSEUS_ENGINE_COMMUNICATION : PERSEUS_ENGINE_MISMATCH,
               deviation.empty() ? message : deviation);
    return;
  }
  op->finish(PERSEUS_ENGINE_OK, "");
}

// ---- failure and shutdown -----------------------------------------------------------------------

void Engine::set_failure(const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failure_.empty()) failure_ = message;
}

std::string Engine::failure() {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

void Engine::fail_pending(perseus_engine_status status, const std::string& message) {
  std::vector<std::shared_ptr<Op>> ops;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, op] : announced_) ops.push_back(op);
    for (auto& op : submitted_) ops.push_back(op);
    announced_.clear();
    submitted_.clear();
    in_flight_names_.clear();
    stopped_ = true;
  }
  for (auto& op : ops) op->finish(status, message);
}

void Engine::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (joined_) return;
    joined_ = true;
    shutdown_requested_ = true;
  }
  submitted_cv_.notify_all();
  if (negotiator_.joinable()) negotiator_.join();
  for (auto& s : streams_) {
    if (s->thread.joinable()) s->thread.join();
  }
}

perseus_engine_info Engine::info() {
  perseus_engine_info i{};
  i.rank = options_.rank;
  i.size = options_.size;
  i.local_rank = local_rank_;
  i.local_size = local_size_;
  i.node = node_;
  i.num_nodes = num_nodes_;
  i.streams = int(streams_.size());
  i.streams_in_use = tuner_ ? tuner_->active() : i.streams;
  i.stream_tuning = !tuner_ || !tuner_->tuning() ? 0 : (tuner_->decided() ? 2 : 1);
  if (tuner_ && tuner_->decided() && tuner_->tuning()) {
    i.tuned_seconds_per_gib_one = tuner_->agreed()[0];
    i.tuned_seconds_per_gib_all = tuner_->agreed()[1];
  }
  i.hierarchical = policy_.hierarchical;
  i.intra_fp16 = policy_.intra_fp16;
  i.inter_fp16 = policy_.inter_fp16;
  i.collectives = collectives_;
  i.fused_groups = fused_groups_;
  i.negotiation_cycles = cycles_;
  i.offline_batches = offline_batches_;
  i.offline = offline_active_ ? 1 : 0;
  i.plan_collectives = plan_collectives_;
  i.renegotiations = renegotiations_;
  return i;
}

}  // namespace perseus::engine

namespace perseus::engine {

void Engine::wire_bytes(const std::string& level, int dtype, uint64_t& bytes, uint64_t& calls) {
  bytes = calls = 0;
  auto add = [&](const Group* g) {
    if (g == nullptr) return;
    bytes += g->wire_bytes(dtype);
    calls += g->wire_calls(dtype);
  };
  if (level == "control") {
    add(control_.get());
    return;
  }
  if (level != "all" && level != "node" && level != "leaders") {
    throw invalid_argument("perseus engine: wire level '" + level + "' is none of all, node, leaders, control");
  }
  for (auto& s : streams_) {
    add(level == "all" ? s->groups.everyone.get() : level == "node" ? s->groups.node.get() : s->groups.leaders.get());
  }
}

}  // namespace perseus::engine
