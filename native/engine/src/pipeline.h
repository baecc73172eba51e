// A pipeline of stages over a fixed pool of slots, one thread per stage: the slot pushed k-th passes
// stage i after the (k-1)-th did and before the (k+1)-th does, so a stage that talks on its own Gloo
// context issues its collectives in the same order on every rank, while stage i works on slot k and
// stage i+1 on slot k-1 (compress the next slice while the previous one is on the wire). The slots
// bound the slices in flight, and so the scratch memory. What a slot holds is the caller's business.
#pragma once

#include <condition_variable>
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
  std::vector<std::thread> threads_;
};

}  // namespace perseus::engine
