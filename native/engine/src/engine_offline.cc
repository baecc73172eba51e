// PERSEUS_OFFLINE_NEG=1 after the switch (see offline.h): the negotiation thread runs the plan's batches
// in order as this rank submits them, without a control allgather. A rank that leaves the plan fails
// its collectives at once with a MISMATCH naming what deviates, and publishes that message in the
// rendezvous store; the other ranks pick it up there (polled while idle, read when a collective with
// the deviating rank fails) and fail with the same message.
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
  std::string deviation;
  {
    std::unique_lock<std::mutex> lock(mu_);
    submitted_cv_.wait_for(lock, kPollInterval, [&] {
      return shutdown_requested_ || !submitted_.empty() || next_batch_submitted();
    });
    if (shutdown_requested_) {
      lock.unlock();
      fail_pending(PERSEUS_ENGINE_SHUT_DOWN, "perseus engine: this rank shut its engine down before it ran this collective");
      return false;
    }
    for (auto& op : submitted_) {
      std::string bad = offline_->check(op->request);
      if (!bad.empty() && deviation.empty()) deviation = bad;
      announced_[op->request.name] = op;  // offline: submitted, waiting for its batch
    }
    submitted_.clear();
    const auto now = std::chrono::steady_clock::now();
    if (deviation.empty() && next_batch_submitted()) {
      for (const auto& entry : offline_->next()) batch.push_back(Agreed{entry.name, entry.per_rank, ""});
      offline_->advance();
      waiting_ = false;
    } else if (deviation.empty() && !announced_.empty()) {
      if (!waiting_) {
        waiting_ = true;
        waiting_since_ = now;
      } else if (now - waiting_since_ > std::chrono::seconds(options_.timeout_seconds)) {
        std::string missing;
        for (const auto& entry : offline_->next()) {
          if (!announced_.count(entry.name)) missing += (missing.empty() ? "'" : ", '") + entry.name + "'";
        }
        deviation = "it submitted '" + announced_.begin()->first + "' but not " + missing +
                    ", which the plan runs before it, within GLOO_TIMEOUT_SECONDS=" +
                    std::to_string(options_.timeout_seconds);
      }
    }
  }
  if (!deviation.empty()) {
    deviate(deviation);
    return false;
  }
  if (!batch.empty()) {
    dispatch(batch);
    ++offline_batches_;
    return true;
  }
  return !poll_abort();
}

void Engine::deviate(const std::string& what) {
  const std::string message =
      "perseus engine: PERSEUS_OFFLINE_NEG=1: rank " + std::to_string(options_.rank) + " left the plan of " +
      std::to_string(offline_->collectives()) + " collectives the ranks agreed (" + offline_->summary() + "): " + what +
      ". Offline negotiation needs every step to submit the same collectives (names, kinds, dtypes, shapes); "
      "unset PERSEUS_OFFLINE_NEG for a program whose collectives change from step to step";
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
