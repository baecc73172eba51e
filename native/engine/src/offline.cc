#include "offline.h"

#include <set>

namespace perseus::engine {

bool same_request(const Request& a, const Request& b) {
  return a.name == b.name && a.kind == b.kind && a.dtype == b.dtype && a.shape == b.shape && a.op == b.op &&
         a.root == b.root && a.device == b.device;
}

namespace {

bool same_entry(const PlanEntry& a, const PlanEntry& b) {
  if (a.name != b.name || a.per_rank.size() != b.per_rank.size()) return false;
  for (size_t r = 0; r < a.per_rank.size(); ++r) {
    if (!same_request(a.per_rank[r], b.per_rank[r])) return false;
  }
  return true;
}

}  // namespace

void PlanLearner::add_cycle(const std::vector<Agreed>& ready) {
  ++cycle_;
  for (const auto& agreed : ready) {
    if (!agreed.mismatch.empty()) {
      history_.clear();
      continue;
    }
    history_.push_back(Item{PlanEntry{agreed.name, agreed.per_rank}, cycle_});
  }
  while (history_.size() > kMaxHistory) history_.pop_front();
}

bool PlanLearner::try_finish(std::vector<PlanBatch>* plan) const {
  const size_t n = history_.size();
  if (n < 2) return false;
  // the candidate step: the longest run of distinct names at the end (steps may differ in order)
  std::set<std::string> seen;
  size_t length = 0;
  while (length < n && seen.insert(history_[n - 1 - length].entry.name).second) ++length;
  if (2 * length > n) return false;
  std::map<std::string, const PlanEntry*> before;
  for (size_t i = n - 2 * length; i < n - length; ++i) {
    if (!before.emplace(history_[i].entry.name, &history_[i].entry).second) return false;  // a name twice
  }
  for (size_t i = n - length; i < n; ++i) {
    const PlanEntry& e = history_[i].entry;
    auto it = before.find(e.name);
    if (it == before.end() || !same_entry(*it->second, e)) return false;
  }
  plan->clear();
  uint64_t cycle = 0;
  for (size_t i = n - length; i < n; ++i) {
    if (plan->empty() || history_[i].cycle != cycle || plan->back().size() == kMaxBatch) plan->emplace_back();
    cycle = history_[i].cycle;
    plan->back().push_back(history_[i].entry);
  }
  return true;
}

OfflinePlan::OfflinePlan(std::vector<PlanBatch> batches, int rank) : batches_(std::move(batches)), rank_(rank) {
  for (const auto& batch : batches_) {
    for (const auto& entry : batch) index_[entry.name] = &entry;
  }
}

std::string OfflinePlan::check(const Request& r) const {
  auto it = index_.find(r.name);
  if (it == index_.end()) {
    return "'" + r.name + "' (" + describe(r) + ") is not one of the " + std::to_string(index_.size()) +
           " collectives of the plan (" + summary() + ")";
  }
  const Request& planned = it->second->per_rank[size_t(rank_)];
  if (!same_request(planned, r)) {
    return "'" + r.name + "' is submitted as " + describe(r) + " but the plan holds " + describe(planned);
  }
  return "";
}

std::string OfflinePlan::summary() const {
  std::string s;
  size_t shown = 0;
  for (const auto& batch : batches_) {
    for (const auto& entry : batch) {
      if (shown == 3) return s + " and " + std::to_string(index_.size() - 3) + " more";
      s += (shown ? ", '" : "'") + entry.name + "'";
      ++shown;
    }
  }
  return s;
}

}  // namespace perseus::engine
