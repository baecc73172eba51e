// PERSEUS_OFFLINE_NEG=1: negotiate online until the collectives repeat, then run from a cached plan.
//
// PlanLearner watches what the ranks agree online (the same on every rank: it only sees agreed data).
// When the table is empty and the last L agreements (the longest run of distinct names at the end)
// repeat the L before them as a set (the same names, each once, in any order, with the same requests
// on every rank), those L collectives, batched as they were agreed, are
// the plan; the ranks switch in the same cycle. OfflinePlan then runs batch after batch in plan order
// as soon as this rank submitted the batch's collectives: no per-cycle allgather. A submission the
// plan does not hold (an unknown name, another kind/dtype/shape/op) is a deviation: see engine_offline.cc.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "negotiation.h"

namespace perseus::engine {

bool same_request(const Request& a, const Request& b);

struct PlanEntry {
  std::string name;
  std::vector<Request> per_rank;
};
using PlanBatch = std::vector<PlanEntry>;

class PlanLearner {
 public:
  // Collectives agreed in one cycle, in agreed order. A mismatch starts the learning over.
  void add_cycle(const std::vector<Agreed>& ready);
  // At a quiescent point (nothing pending in the table): the plan when the last agreements repeat.
  bool try_finish(std::vector<PlanBatch>* plan) const;

  static constexpr size_t kMaxHistory = 1u << 16;
  // A batch runs once this rank submitted all of it: a step agreed in one cycle would otherwise wait for
  // its last collective before any transfer starts, where online negotiation starts on the first ones
  // while the rest are being submitted. Batches of at most kMaxBatch keep that overlap (in plan order).
  static constexpr size_t kMaxBatch = 16;

 private:
  struct Item {
    PlanEntry entry;
    uint64_t cycle;
  };
  std::deque<Item> history_;
  uint64_t cycle_ = 0;
};

class OfflinePlan {
 public:
  OfflinePlan(std::vector<PlanBatch> batches, int rank);
  // "" when this rank's request matches the plan's entry of its name, else what deviates.
  std::string check(const Request& r) const;
  const PlanBatch& next() const { return batches_[pos_]; }
  void advance() { pos_ = (pos_ + 1) % batches_.size(); }
  size_t collectives() const { return index_.size(); }
  size_t batches() const { return batches_.size(); }
  // "'a', 'b' and 3 more": for messages.
  std::string summary() const;

 private:
  std::vector<PlanBatch> batches_;
  size_t pos_ = 0;
  std::map<std::string, const PlanEntry*> index_;
  int rank_;
};

}  // namespace perseus::engine
