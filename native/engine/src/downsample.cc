#include "downsample.h"

#include "errors.h"
#include "perseus/core.h"

namespace perseus::engine {

Downsampler::Slice Downsampler::begin(const std::string& name, float* gradient, uint64_t numel, uint64_t n,
                                      float momentum) {
  std::lock_guard<std::mutex> lock(mu_);
  State& state = states_[name];
  if (state.residual.size() != numel) state.residual.assign(numel, 0.0f);  // a new (or resized) gradient
  auto p = std::make_unique<Pending>();
  p->gradient = gradient;
  p->numel = numel;
  p->n = n;
  p->step = state.step;
  const uint64_t count = perseus_downsample_count(numel, n, p->step);
  p->sent = std::make_unique<std::vector<float>>(count ? count : 1);
  if (perseus_downsample_gather_momentum(gradient, state.residual.data(), p->sent->data(), numel, n, p->step,
                                         momentum) != PERSEUS_OK) {
    throw invalid_argument(std::string("perseus engine: downsampling '") + name + "': " + perseus_last_error());
  }
  ++state.step;
  Slice slice{name + "#ds" + std::to_string(p->step % n), p->sent->data(), count};
  last_ = std::move(p);
  last_name_ = name;
  return slice;
}

void Downsampler::bind(int64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_[handle] = std::move(last_);
}

void Downsampler::abandon() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!last_) return;
  // the gradient stays in the residual: fold the gathered elements back and step back
  State& state = states_[last_name_];
  perseus_downsample_scatter(last_->sent->data(), state.residual.data(), 4, last_->numel, last_->n, last_->step, 0);
  --state.step;
  last_.reset();
}

void Downsampler::complete(int64_t handle) {
  std::unique_ptr<Pending> p;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(handle);
    if (it == pending_.end()) return;
    p = std::move(it->second);
    pending_.erase(it);
  }
  perseus_downsample_scatter(p->sent->data(), p->gradient, 4, p->numel, p->n, p->step, 1);
}

void Downsampler::forget(int64_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.erase(handle);
}

}  // namespace perseus::engine
