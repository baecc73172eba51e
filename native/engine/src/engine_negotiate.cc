// The negotiation thread: each cycle every rank announces what it submitted, all agree the order, and
// the agreed collectives are fused (fp32 allreduces) and handed to the stream threads.
#include <algorithm>
#include <chrono>

#include "engine.h"
#include "errors.h"
#include "plan.h"

namespace perseus::engine {

void Engine::negotiate_loop() {
  const auto cycle = std::chrono::microseconds(int64_t(options_.cycle_ms * 1000));
  // Eager cycles: while collectives this rank announced wait for other ranks, the next allgather starts at
  // once instead of after a cycle. It then waits in Gloo for the others' next cycle, which a late rank
  // starts the moment it submits: the collective is agreed one round trip after the last submission
  // rather than up to a cycle later. Bounded, so that ranks waiting for each other do not spin.
  constexpr int kMaxEagerCycles = 64;
  int eager_streak = 0;
  // Idle back-off: after cycles in which no rank announced anything and this rank waits for nothing, the
  // wait for a submission doubles, up to kMaxIdleCycles cycles. A submission or a shutdown still ends the
  // wait at once, so a collective is announced as soon as it is submitted; what waits longer is only a
  // rank's allgather for an idle rank's next cycle, and that rank has not submitted the collective anyway.
  // At 1 ms cycles an idle job ran ~1000 allgathers a second: a quarter of a core per rank.
  constexpr int kMaxIdleCycles = 32;
  int quiet_cycles = 0;
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
      if (!eager) {
        const auto wait = cycle * std::min(1 << std::min(quiet_cycles, 5), kMaxIdleCycles);
        submitted_cv_.wait_for(lock, wait, [&] { return !submitted_.empty() || shutdown_requested_; });
      }
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
    bool quiet = mine.requests.empty();
    try {
      all = control_->allgather_bytes(encode(mine));
      ++cycles_;
      for (int r = 0; r < options_.size; ++r) {
        Announcement a = decode(all[size_t(r)]);
        quiet = quiet && a.requests.empty() && a.aborts.empty();
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
    {
      std::lock_guard<std::mutex> lock(mu_);
      quiet = quiet && announced_.empty();
    }
    quiet_cycles = quiet ? quiet_cycles + 1 : 0;
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
      run_allreduce_fp32(s, g.ops, g.units, g.reduce_op, [this, tag] { tuner_->group_done(tag); });
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

}  // namespace perseus::engine
