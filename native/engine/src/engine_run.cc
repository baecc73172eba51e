// The stream threads: each runs the collectives handed to it, in order, on its own Gloo groups.
#include <cstring>

#include "engine.h"
#include "errors.h"
#include "perseus/core.h"

namespace perseus::engine {

void Engine::stream_loop(Stream& s) {
  while (true) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(s.mu);
      s.cv.wait(lock, [&] { return s.stop || !s.queue.empty(); });
      if (s.queue.empty()) break;  // stopping and drained
      task = std::move(s.queue.front());
      s.queue.pop_front();
    }
    task();
  }
  s.pipeline->drain();
  print_profile(s);
  s.pipeline.reset();  // joins its threads
}

std::string Engine::collective_error(const Request& r, const std::string& what) const {
  return "perseus engine: " + describe(r) + " '" + r.name + "' failed on rank " + std::to_string(options_.rank) +
         ": " + what + ". A rank was lost (crashed or killed) or did not reach this collective within "
         "GLOO_TIMEOUT_SECONDS=" + std::to_string(options_.timeout_seconds);
}

void Engine::run_single(Stream& s, const std::shared_ptr<Op>& op, const Agreed& agreed) {
  s.pipeline->drain();  // the fused groups before it have left their contexts (`everyone` among them)
  perseus_engine_status refused;
  std::string why;
  if (refused_after_failure(refused, why)) {
    op->finish(refused, why);
    return;
  }
  const Request& r = op->request;
  Group& everyone = *s.groups.everyone;
  const size_t es = dtype_size(r.dtype);
  const uint64_t n = numel(r.shape);
  try {
    switch (r.kind) {
      case Kind::kAllreduce: {
        everyone.allreduce_sum(op->data, n, r.dtype);
        ++collectives_;
        if (r.op == PERSEUS_ENGINE_AVERAGE && options_.size > 1) {
          if (r.dtype == PERSEUS_ENGINE_FLOAT64) {
            auto* d = static_cast<double*>(op->data);
            for (uint64_t i = 0; i < n; ++i) d[i] /= double(options_.size);
          } else {  // fp16 / bf16: through fp32, one rounding
            const auto half = r.dtype == PERSEUS_ENGINE_FLOAT16 ? PERSEUS_FLOAT16 : PERSEUS_BFLOAT16;
            std::vector<float> tmp(n);
            uint64_t nonfinite = 0;
            perseus_decompress(op->data, half, tmp.data(), n, 1.0f, options_.size, &nonfinite);
            perseus_compress(tmp.data(), op->data, half, n, 1.0f, &nonfinite);
          }
        }
        break;
      }
      case Kind::kBroadcast:
        everyone.broadcast(op->data, n * es, r.root, r.dtype);
        ++collectives_;
        break;
      case Kind::kAllgather: {
        std::vector<uint64_t> bytes;
        uint64_t total = 0;
        for (const auto& pr : agreed.per_rank) {
          op->first_dims.push_back(pr.shape[0]);
          bytes.push_back(numel(pr.shape) * es);
          total += bytes.back();
        }
        op->gathered.resize(total);
        everyone.allgatherv(op->input, total ? op->gathered.data() : nullptr, bytes);
        ++collectives_;
        break;
      }
      case Kind::kBarrier:
        everyone.barrier();
        ++collectives_;
        break;
    }
  } catch (const std::exception& e) {
    fail_collective(*op, e.what());
    return;
  }
  op->finish(PERSEUS_ENGINE_OK, "");
}

bool Engine::refused_after_failure(perseus_engine_status& status, std::string& message) {
  std::string broken = failure();
  if (broken.empty()) return false;
  std::string deviation = abort_after_failure();
  status = deviation.empty() ? PERSEUS_ENGINE_COMMUNICATION : PERSEUS_ENGINE_MISMATCH;
  message = deviation.empty() ? "perseus engine is broken: " + broken : deviation;
  return true;
}

void Engine::fail_collective(Op& op, const std::string& what) {
  std::string message = collective_error(op.request, what);
  std::string deviation = abort_after_failure();
  set_failure(deviation.empty() ? message : deviation);
  op.finish(deviation.empty() ? PERSEUS_ENGINE_COMMUNICATION : PERSEUS_ENGINE_MISMATCH,
            deviation.empty() ? message : deviation);
}

}  // namespace perseus::engine
