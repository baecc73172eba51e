#include "stream_tuner.h"

#include <cmath>
#include <limits>

namespace perseus::engine {

StreamTuner::StreamTuner(int limit, bool tune) {
  limit = limit < 1 ? 1 : limit;
  candidates_ = (tune && limit > 1) ? std::vector<int>{1, limit} : std::vector<int>{limit};
  // 1, limit, 1 again: a drift over the first steps (cold caches and allocations, load) then weighs on
  // both counts alike instead of on whichever runs first
  phases_ = candidates_.size() == 1 ? std::vector<size_t>{0} : std::vector<size_t>{0, 1, 0};
  active_ = candidates_[0];
  decided_ = candidates_.size() == 1;
  busy_seconds_.assign(candidates_.size(), 0.0);
  busy_bytes_.assign(candidates_.size(), 0);
  measured_left_.assign(candidates_.size(), 0);
}

StreamTuner::Slot StreamTuner::on_dispatch(uint64_t bytes) {
  if (decided_ || decision_due()) return Slot{-1, active_};
  Slot slot{dispatched_ < kWarmup ? -1 : int(phases_[position_]), candidates_[phases_[position_]]};
  if (bytes >= kMinBytes && ++dispatched_ == kWarmup + kMeasured && position_ + 1 < phases_.size()) {
    ++position_;
    dispatched_ = 0;
    active_ = candidates_[phases_[position_]];
  }
  return slot;
}

bool StreamTuner::decision_due() const {
  return !decided_ && position_ + 1 == phases_.size() && dispatched_ == kWarmup + kMeasured;
}

bool StreamTuner::measured_groups_done() {
  std::lock_guard<std::mutex> lock(mu_);
  for (int left : measured_left_) {
    if (left != 0) return false;
  }
  return in_flight_ == 0;
}

std::vector<double> StreamTuner::local_seconds_per_gib() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<double> out;
  for (size_t c = 0; c < candidates_.size(); ++c) {
    // no clean busy period (groups of two candidates always overlapped): unknown, which keeps the fewest
    out.push_back(busy_bytes_[c] == 0 ? std::numeric_limits<double>::infinity()
                                      : busy_seconds_[c] / (double(busy_bytes_[c]) / double(1u << 30)));
  }
  return out;
}

void StreamTuner::decide(const std::vector<double>& slowest_seconds_per_gib) {
  agreed_ = slowest_seconds_per_gib;
  active_ = choose(candidates_, agreed_);
  decided_ = true;
}

int StreamTuner::choose(const std::vector<int>& candidates, const std::vector<double>& seconds_per_gib) {
  for (double v : seconds_per_gib) {
    if (!std::isfinite(v)) return candidates[0];
  }
  int best = candidates[0];
  double best_time = seconds_per_gib[0];
  for (size_t i = 1; i < candidates.size() && i < seconds_per_gib.size(); ++i) {
    if (seconds_per_gib[i] < best_time * (1.0 - kMargin)) {
      best = candidates[i];
      best_time = seconds_per_gib[i];
    }
  }
  return best;
}

void StreamTuner::group_started(int tag, uint64_t bytes) {
  if (decided_) return;  // set by the negotiation thread, which also calls this
  std::lock_guard<std::mutex> lock(mu_);
  if (in_flight_++ == 0) {
    period_start_ = std::chrono::steady_clock::now();
    period_tag_ = tag;
    period_mixed_ = false;
    period_bytes_ = 0;
  } else if (tag != period_tag_) {
    period_mixed_ = true;
  }
  period_bytes_ += bytes;
  if (tag >= 0) ++measured_left_[size_t(tag)];
}

void StreamTuner::group_done(int tag) {
  std::lock_guard<std::mutex> lock(mu_);
  if (in_flight_ == 0) return;  // started after the decision: not counted
  if (tag >= 0) --measured_left_[size_t(tag)];
  if (--in_flight_ == 0 && !period_mixed_ && period_tag_ >= 0) {
    busy_seconds_[size_t(period_tag_)] +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - period_start_).count();
    busy_bytes_[size_t(period_tag_)] += period_bytes_;
  }
}

}  // namespace perseus::engine
