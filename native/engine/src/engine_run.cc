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
      if (s.queue.empty()) return;  // stopping and drained
      task = std::move(s.queue.front());
      s.queue.pop_front();
    }
    task();
  }
}

std::string Engine::collective_error(const Request& r, const std::string& what) const {
  return "perseus engine: " + describe(r) + " '" + r.name + "' failed on rank " + std::to_string(options_.rank) +
         ": " + what + ". A rank was lost (crashed or killed) or did not reach this collective within "
         "GLOO_TIMEOUT_SECONDS=" + std::to_string(options_.timeout_seconds);
}

void Engine::run_allreduce_fp32(Stream& s, const std::vector<std::shared_ptr<Op>>& ops,
                                const std::vector<Unit>& units, int reduce_op) {
  std::string broken = failure();
  if (!broken.empty()) {
    std::string deviation = abort_after_failure();
    for (const auto& u : units) {
      ops[u.tensor]->part_done(deviation.empty() ? PERSEUS_ENGINE_COMMUNICATION : PERSEUS_ENGINE_MISMATCH,
                               deviation.empty() ? "perseus engine is broken: " + broken : deviation);
    }
    return;
  }
  const Unit& first = units[0];
  const bool in_place = units.size() == 1 && first.offset == 0 && first.numel == numel(ops[first.tensor]->request.shape);
  uint64_t n = 0;
  for (const auto& u : units) n += u.numel;
  float* payload = nullptr;
  if (in_place) {
    payload = static_cast<float*>(ops[first.tensor]->data);
  } else {
    if (s.fusion.size() < n) s.fusion.resize(n);
    payload = s.fusion.data();
    uint64_t at = 0;
    for (const auto& u : units) {
      std::memcpy(payload + at, static_cast<float*>(ops[u.tensor]->data) + u.offset, u.numel * 4);
      at += u.numel;
    }
    ++fused_groups_;
  }
  perseus_engine_status status = PERSEUS_ENGINE_OK;
  std::string message;
  try {
    uint64_t issued = 0;
    const int64_t divisor = reduce_op == PERSEUS_ENGINE_AVERAGE ? options_.size : 1;
    uint64_t nonfinite = allreduce_fp32(s.groups, policy_, payload, n, divisor, options_.nancheck != 0, s.half, issued);
    collectives_ += issued;
    if (options_.nancheck && nonfinite > 0) {
      std::string names;
      for (const auto& u : units) {
        const std::string& nm = ops[u.tensor]->request.name;
        if (names.find("'" + nm + "'") == std::string::npos) names += (names.empty() ? "'" : ", '") + nm + "'";
      }
      status = PERSEUS_ENGINE_NONFINITE;
      message = "PERSEUS_ALLREDUCE_NANCHECK: the reduced result of " + names + " is not finite (inf or NaN) in " +
                std::to_string(nonfinite) + " element(s). A loss that grows too large can overflow fp16 after the "
                "gradient scale: lower PERSEUS_ALLREDUCE_GRADIENT_SCALE or find the layer that produces it";
    }
  } catch (const std::exception& e) {
    status = PERSEUS_ENGINE_COMMUNICATION;
    message = collective_error(ops[first.tensor]->request, e.what());
    std::string deviation = abort_after_failure();
    if (!deviation.empty()) {
      status = PERSEUS_ENGINE_MISMATCH;
      message = deviation;
    }
    set_failure(message);
  }
  if (!in_place) {
    uint64_t at = 0;
    for (const auto& u : units) {
      std::memcpy(static_cast<float*>(ops[u.tensor]->data) + u.offset, payload + at, u.numel * 4);
      at += u.numel;
    }
  }
  for (const auto& u : units) ops[u.tensor]->part_done(status, message);
}

void Engine::run_single(Stream& s, const std::shared_ptr<Op>& op, const Agreed& agreed) {
  std::string broken = failure();
  if (!broken.empty()) {
    std::string deviation = abort_after_failure();
    op->finish(deviation.empty() ? PERSEUS_ENGINE_COMMUNICATION : PERSEUS_ENGINE_MISMATCH,
               deviation.empty() ? "perseus engine is broken: " + broken : deviation);
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
    std::string message = collective_error(r, e.what());
    std::string deviation = abort_after_failure();
    set_failure(deviation.empty() ? message : deviation);
    op->finish(deviation.empty() ? PERSEUS_ENGINE_COMMUNICATION : PERSEUS_ENGINE_MISMATCH,
               deviation.empty() ? message : deviation);
    return;
  }
  op->finish(PERSEUS_ENGINE_OK, "");
}

}  // namespace perseus::engine
