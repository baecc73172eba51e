#include "pipeline.h"

#include <stdexcept>

namespace perseus::engine {

Pipeline::Pipeline(std::vector<Stage> stages, size_t slots, const std::function<void()>& thread_init)
    : stages_(std::move(stages)), slot_count_(slots), queues_(stages_.size()),
      busy_ns_(new std::atomic<uint64_t>[stages_.size()]) {
  for (size_t i = 0; i < stages_.size(); ++i) busy_ns_[i] = 0;
  if (stages_.empty() || slots == 0) throw std::invalid_argument("a pipeline needs a stage and a slot");
  for (size_t s = slots; s > 0; --s) free_.push_back(s - 1);
  for (size_t i = 0; i < stages_.size(); ++i) {
    threads_.emplace_back([this, i, thread_init] {
      if (thread_init) thread_init();
      run(i);
    });
  }
}

Pipeline::~Pipeline() {
  drain();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

size_t Pipeline::acquire() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !free_.empty(); });
  size_t slot = free_.back();
  free_.pop_back();
  return slot;
}

void Pipeline::push(size_t slot) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queues_[0].push_back(slot);
    ++in_flight_;
  }
  cv_.notify_all();
}

void Pipeline::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return in_flight_ == 0; });
}

std::vector<double> Pipeline::busy_seconds() const {
  std::vector<double> out;
  for (size_t i = 0; i < stages_.size(); ++i) out.push_back(double(busy_ns_[i].load()) * 1e-9);
  return out;
}

void Pipeline::run(size_t stage) {
  auto& queue = queues_[stage];
  while (true) {
    size_t slot;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue.empty(); });
      if (queue.empty()) return;  // stopping, and drain() saw nothing in flight
      slot = queue.front();
      queue.pop_front();
    }
    const auto start = std::chrono::steady_clock::now();
    stages_[stage](slot);
    busy_ns_[stage] += uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::steady_clock::now() - start).count());
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stage + 1 < stages_.size()) {
        queues_[stage + 1].push_back(slot);
      } else {
        free_.push_back(slot);
        --in_flight_;
        ++passed_;
      }
    }
    cv_.notify_all();
  }
}

}  // namespace perseus::engine
