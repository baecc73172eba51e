// The stream tuner's decision inside the engine (the rule itself: stream_tuner.h).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <thread>

#include "engine.h"

namespace perseus::engine {

void Engine::agree_streams() {
  // Every rank is at this same dispatch. Its measured groups need no further dispatch to finish.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options_.timeout_seconds);
  while (!tuner_->measured_groups_done() && std::chrono::steady_clock::now() < deadline && failure().empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::vector<double> mine = tuner_->local_seconds_per_gib();
  if (!tuner_->measured_groups_done()) mine.assign(mine.size(), std::numeric_limits<double>::infinity());
  std::vector<double> slowest = mine;
  try {
    std::vector<char> bytes(mine.size() * sizeof(double));
    std::memcpy(bytes.data(), mine.data(), bytes.size());
    store_->set("perseus/streams/" + std::to_string(options_.rank), bytes);
    std::vector<std::string> keys;
    for (int r = 0; r < options_.size; ++r) keys.push_back("perseus/streams/" + std::to_string(r));
    store_->wait(keys);
    for (const auto& key : keys) {
      auto theirs = store_->get(key);
      if (theirs.size() != bytes.size()) throw std::runtime_error("stream tuner figures of another size under " + key);
      for (size_t c = 0; c < slowest.size(); ++c) {
        double v;
        std::memcpy(&v, theirs.data() + c * sizeof(double), sizeof(double));
        slowest[c] = std::max(slowest[c], v);
      }
    }
  } catch (const std::exception& e) {
    // the ranks could not agree: no rank may go on with a count the others may not share
    std::string message = std::string("perseus engine: the stream tuner could not exchange its figures through the "
                                      "rendezvous store: ") + e.what() + ". Set PERSEUS_ALLREDUCE_STREAMS to skip the tuning";
    set_failure(message);
  }
  tuner_->decide(slowest);
}

}  // namespace perseus::engine
