// The engine's life cycle: construction, submission and completion of collectives, failure, shutdown
// and what it reports. Rendezvous: engine_rendezvous.cc; negotiation and dispatch: engine_negotiate.cc;
// the collectives on the stream threads: engine_run.cc; PERSEUS_OFFLINE_NEG: engine_offline.cc.
#include "engine.h"

#include "errors.h"

namespace perseus::engine {

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
  op->sequence = handle;
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
  for (auto& s : streams_) {
    for (const Group* g : s->groups.inside_node(num_nodes_ == 1)) {
      if (g == nullptr || g->size() < 2) continue;
      ++i.node_groups;
      i.shared_memory_groups += g->shares_memory() ? 1 : 0;
    }
  }
  return i;
}


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
    add(level == "all" ? s->groups.everyone.get() : level == "node" ? s->groups.node.get() : s->groups.between_nodes());
    if (level == "node") add(s->groups.node_bcast.get());
  }
}


}  // namespace perseus::engine
