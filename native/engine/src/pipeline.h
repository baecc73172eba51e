// A pipeline of stages over a fixed pool of slots, one thread per stage: the slot pushed k-th passes
// stage i after the (k-1)-th did and before the (k+1)-th does, so a stage that talks on its own Gloo
// context issues its collectives in the same order on every rank, while stage i works on slot k and
// stage i+1 on slot k-1 (compress the next slice while the previous one is on the wire). The slots
// bound the slices in flight, and so the scratch memory. What a slot holds is the caller's business.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <string>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace perseus::engine {

class Pipeline {
 public:
  using Stage = std::function<void(size_t slot)>;  // must not throw
  // Starts one thread per stage; each runs `thread_init` first (the engine blocks SIGPIPE there).
  Pipeline(std::vector<Stage> stages, size_t slots, const std::function<void()>& thread_init);
  ~Pipeline();  // drain() then join
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  size_t slots() const { return slot_count_; }
  size_t stages() const { return stages_.size(); }
  // Blocks until a slot is free and returns it; fill it, then push() it.
  size_t acquire();
  void push(size_t slot);
  // Blocks until every pushed slot has left the last stage.
  void drain();
  // Seconds each stage spent on slots so far (a collective's stage: its waits for the peers included).
  std::vector<double> busy_seconds() const;
  uint64_t passed() const { return passed_.load(); }  // slots that left the last stage

 private:
  void run(size_t stage);

  std::vector<Stage> stages_;
  size_t slot_count_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::deque<size_t>> queues_;  // per stage: slots waiting for it, in push order
  std::vector<size_t> free_;
  size_t in_flight_ = 0;
  bool stop_ = false;
  std::unique_ptr<std::atomic<uint64_t>[]> busy_ns_;
  std::atomic<uint64_t> passed_{0};
  std::vector<std::thread> threads_;
};

}  // namespace perseus::engine
