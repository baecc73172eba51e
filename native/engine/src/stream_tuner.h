// How many of the engine's streams (PERSEUS_ALLREDUCE_STREAMS, an upper limit) carry the fused allreduce
// groups, on the engine's own units.
//
// Several streams pay where one connection cannot fill the network (a cloud VPC caps each TCP flow);
// where one fills it, concurrent groups only share the link. Unless the user set the variable, the
// engine measures: the first qualifying dispatches (a negotiation cycle's or plan batch's fused groups
// of >= kMinBytes) run on one stream, the next ones on all, the next on one again (so that a drift over
// the first steps does not favour the count measured last), and it keeps the fewest streams unless more
// are faster by kMargin. The measure is communication time per byte: the busy periods of this rank's
// fused groups (from the first group's dispatch while none was in flight to the last one's end) that
// ran on one candidate only, divided by their bytes. The schedule counts agreed dispatches, so every
// rank switches at the same dispatch; the decision takes every rank's figures (the slowest counts),
// exchanged through the rendezvous store (engine_streams.cc), so every rank picks the same count.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace perseus::engine {

class StreamTuner {
 public:
  static constexpr uint64_t kMinBytes = 1u << 20;
  static constexpr int kWarmup = 2;    // qualifying dispatches of a candidate not measured
  static constexpr int kMeasured = 8;  // qualifying dispatches measured per candidate
  static constexpr double kMargin = 0.03;

  StreamTuner(int limit, bool tune);

  // Negotiation thread, once per dispatch with fused groups of `bytes` in all: the tag of its groups
  // (the candidate they are measured for, -1: not measured) and the streams they spread over.
  struct Slot {
    int tag;
    int streams;
  };
  Slot on_dispatch(uint64_t bytes);
  // Every candidate's measured dispatches were issued and no decision was taken yet.
  bool decision_due() const;
  // This rank's seconds per GiB of each candidate (valid once its measured groups all finished).
  std::vector<double> local_seconds_per_gib();
  bool measured_groups_done();
  // The slowest rank's figures: the choice every rank makes from them.
  void decide(const std::vector<double>& slowest_seconds_per_gib);

  // Any thread: a fused group was enqueued / finished.
  void group_started(int tag, uint64_t bytes);
  void group_done(int tag);

  int active() const { return active_; }
  bool tuning() const { return candidates_.size() > 1; }
  bool decided() const { return decided_; }
  const std::vector<int>& candidates() const { return candidates_; }
  const std::vector<double>& agreed() const { return agreed_; }

  // The fewest streams unless more are faster by kMargin (the Python rule).
  static int choose(const std::vector<int>& candidates, const std::vector<double>& seconds_per_gib);

 private:
  std::vector<int> candidates_;
  std::vector<size_t> phases_;  // the candidates in measuring order
  size_t position_ = 0;  // phase in use
  int dispatched_ = 0;   // qualifying dispatches on it
  int active_;
  bool decided_;
  std::vector<double> agreed_;

  std::mutex mu_;  // the busy accounting below (stream threads and the negotiation thread)
  int in_flight_ = 0;
  int period_tag_ = -1;
  bool period_mixed_ = false;
  uint64_t period_bytes_ = 0;
  std::chrono::steady_clock::time_point period_start_;
  std::vector<double> busy_seconds_;
  std::vector<uint64_t> busy_bytes_;
  std::vector<int> measured_left_;  // measured groups not finished yet, per candidate
};

}  // namespace perseus::engine
