// PERSEUS_OFFLINE_NEG=1 after the switch (see offline.h): the negotiation thread runs the plan's batches
// in order as this rank submits them, without a control allgather.
//
// A submission the plan does not hold (or a batch that stays incomplete for GLOO_TIMEOUT_SECONDS)
// makes the rank leave the plan: one allgather on the control context, which every rank joins when
// it leaves the plan too (a new phase of the program: evaluation, another model) or shuts down. The
// ranks that ran fewer plan batches run the rest, then all negotiate online again (and learn a new
// plan). A rank whose peers do not follow within GLOO_TIMEOUT_SECONDS fails its collectives with a
// MISMATCH naming what deviates and publishes that message in the rendezvous store; the other ranks
// pick it up there (polled while idle, read when a collective with that rank fails) and report it.
#include <algorithm>
#include <chrono>

#include "engine.h"

namespace perseus::engine {
namespace {

const char* const kAbortKey = "perseus/offline/abort";
const char* const kAbortCount = "perseus/offline/aborted";
constexpr auto kPollInterval = std::chrono::milliseconds(100);

}  // namespace

bool Engine::next_batch_submitted() const {
  for (const auto& entry : offline_->next()) {
    if (!announced_.count(entry.name)) return false;
  }
  return true;
}

bool Engine::offline_cycle() {
  std::vector<Agreed> batch;
  std::string off_plan;
  bool shutdown = false;
  {
    std::unique_lock<std::mutex> lock(mu_);
    submitted_cv_.wait_for(lock, kPollInterval, [&] {
      return shutdown_requested_ || !submitted_.empty() || next_batch_submitted();
    });
    shutdown = shutdown_requested_;
    for (auto& op : submitted_) {
      std::string bad = offline_->check(op->request);
      if (!bad.empty() && off_plan.empty()) off_plan = bad;
      announced_[op->request.name] = op;  // offline: submitted, waiting for its batch
    }
    submitted_.clear();
    const auto now = std::chrono::steady_clock::now();
    if (!shutdown && off_plan.empty() && next_batch_submitted()) {
      for (const auto& entry : offline_->next()) batch.push_back(Agreed{entry.name, entry.per_rank, ""});
      offline_->advance();
      waiting_ = false;
    } else if (!shutdown && off_plan.empty() && !announced_.empty()) {
      if (!waiting_) {
        waiting_ = true;
        waiting_since_ = now;
      } else if (now - waiting_since_ > std::chrono::seconds(options_.timeout_seconds)) {
        std::string missing;
        for (const auto& entry : offline_->next()) {
          if (!announced_.count(entry.name)) missing += (missing.empty() ? "'" : ", '") + entry.name + "'";
        }
        off_plan = "it submitted '" + announced_.begin()->first + "' but not " + missing +
                   ", which the plan runs before it, within GLOO_TIMEOUT_SECONDS=" +
                   std::to_string(options_.timeout_seconds);
      }
    }
  }
  if (shutdown || !off_plan.empty()) return renegotiate(shutdown, off_plan);
  if (!batch.empty()) {
    ++offline_batches_;  // before: dispatch may run the batch on this thread, and its waiter may read info
    dispatch(batch);
    return true;
  }
  return !poll_abort();
}

bool Engine::shutdown_requested() {
  std::lock_guard<std::mutex> lock(mu_);
  return shutdown_requested_;
}

bool Engine::run_next_batch(std::chrono::steady_clock::time_point deadline) {
  std::vector<Agreed> batch;
  {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      for (auto& op : submitted_) announced_[op->request.name] = op;
      submitted_.clear();
      if (next_batch_submitted()) break;
      if (shutdown_requested_ ||
          !submitted_cv_.wait_until(lock, deadline, [&] { return shutdown_requested_ || !submitted_.empty(); })) {
        return false;
      }
    }
    for (const auto& entry : offline_->next()) batch.push_back(Agreed{entry.name, entry.per_rank, ""});
    offline_->advance();
  }
  ++offline_batches_;
  dispatch(batch);
  return true;
}

bool Engine::renegotiate(bool shutdown, const std::string& off_plan) {
  // Every rank that leaves the plan (or shuts down) comes here; one allgather tells where each one is.
  Announcement mine;
  mine.shutdown = shutdown;
  mine.position = int64_t(offline_batches_);
  const std::string timeout = std::to_string(options_.timeout_seconds);
  int64_t target = mine.position;
  int shutdown_by = -1;
  try {
    auto all = control_->allgather_bytes(encode(mine));
    ++cycles_;
    for (int r = 0; r < options_.size; ++r) {
      Announcement a = decode(all[size_t(r)]);
      if (a.shutdown && shutdown_by < 0) shutdown_by = r;
      target = std::max(target, a.position);
    }
  } catch (const std::exception& e) {
    if (shutdown) {
      fail_pending(PERSEUS_ENGINE_SHUT_DOWN, "perseus engine: this rank shut its engine down before it ran this collective");
    } else {
      deviate(off_plan + "; the other ranks did not leave the plan too within GLOO_TIMEOUT_SECONDS=" + timeout +
              " (" + e.what() + ")");
    }
    return false;
  }
  if (shutdown_by >= 0) {
    std::string who = shutdown_by == options_.rank ? "this rank" : "rank " + std::to_string(shutdown_by);
    fail_pending(PERSEUS_ENGINE_SHUT_DOWN, "perseus engine: " + who + " shut its engine down before every rank ran this collective");
    return false;
  }
  // Ranks that ran fewer plan batches run the rest first: every stream then sees the same collectives.
  while (int64_t(offline_batches_) < target) {
    if (!run_next_batch(std::chrono::steady_clock::now() + std::chrono::seconds(options_.timeout_seconds))) {
      if (shutdown_requested()) {
        fail_pending(PERSEUS_ENGINE_SHUT_DOWN, "perseus engine: this rank shut its engine down before it ran this collective");
        return false;
      }
      std::string missing;
      for (const auto& entry : offline_->next()) missing += (missing.empty() ? "'" : ", '") + entry.name + "'";
      deviate("it did not submit " + missing + " within GLOO_TIMEOUT_SECONDS=" + timeout +
              " while other ranks had run it from the plan before they left the plan");
      return false;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  // announced online from the next cycle, in the order they were submitted: before whatever was submitted
  // during the renegotiation (else a step's first collective is agreed after its second, and the plan
  // learner can take a half step for the whole one)
  std::vector<std::shared_ptr<Op>> earlier;
  for (auto& [name, op] : announced_) earlier.push_back(op);
  std::sort(earlier.begin(), earlier.end(), [](const auto& a, const auto& b) { return a->sequence < b->sequence; });
  submitted_.insert(submitted_.begin(), earlier.begin(), earlier.end());
  announced_.clear();
  offline_.reset();
  offline_active_ = false;
  plan_collectives_ = 0;
  waiting_ = false;
  learner_ = std::make_unique<PlanLearner>();
  ++renegotiations_;
  return true;
}

void Engine::deviate(const std::string& what) {
  const std::string message =
      "perseus engine: PERSEUS_OFFLINE_NEG=1: rank " + std::to_string(options_.rank) + " left the plan of " +
      std::to_string(offline_->collectives()) + " collectives the ranks agreed (" + offline_->summary() + "): " + what +
      ". Offline negotiation needs every step to submit the same collectives (names, kinds, dtypes, shapes), "
      "and ranks that change them to do so together; unset PERSEUS_OFFLINE_NEG for a program whose collectives "
      "differ by rank or from step to step";
  if (store_) {
    try {
      store_->set(kAbortKey, std::vector<char>(message.begin(), message.end()));
      store_->add(kAbortCount, 1);
    } catch (const std::exception&) {
      // the store is gone: the other ranks still fail, with the transport's message
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    offline_abort_ = message;
  }
  set_failure(message);
  fail_pending(PERSEUS_ENGINE_MISMATCH, message);
}

bool Engine::poll_abort() {
  const auto now = std::chrono::steady_clock::now();
  if (!store_ || abort_poll_off_ || now - last_abort_poll_ < kPollInterval) return false;
  last_abort_poll_ = now;
  std::string message;
  try {
    if (store_->add(kAbortCount, 0) == 0) return false;
    auto bytes = store_->get(kAbortKey);
    message.assign(bytes.begin(), bytes.end());
  } catch (const std::exception&) {
    abort_poll_off_ = true;  // the store ended (its host left): nothing more to learn from it
    return false;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    offline_abort_ = message;
  }
  set_failure(message);
  fail_pending(PERSEUS_ENGINE_MISMATCH, message);
  return true;
}

std::string Engine::abort_after_failure() {
  if (!offline_active_) return "";
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!offline_abort_.empty()) return offline_abort_;
  }
  if (!store_) return "";
  try {
    // the deviating rank publishes before its connections can close: a short wait covers the race
    auto bytes = store_->get(kAbortKey, std::chrono::milliseconds(2000));
    return std::string(bytes.begin(), bytes.end());
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace perseus::engine
