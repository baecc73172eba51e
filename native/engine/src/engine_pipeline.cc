// The pipeline of a stream's fp32 allreduces. A fused group (a slice of about kPartitionBytes with
// automatic fusion) passes the stages in order: gather into the slot's buffer (and the policy's local
// steps before its first collective), then one stage per collective of the policy, each on its own Gloo
// context, local steps (compress, decompress, divide) in a stage of their own between two collectives,
// and last the scatter and completion. So while slice k is on the wire, slice k+1 is compressed and
// slice k-1 decompressed; in two levels, the node reduce of k+1, the leaders' allreduce of k and the node
// broadcast of k-1 run at once. Every slice takes the same steps as one run alone would (wire_steps), on
// the same groups, in the same order on every rank: the results are bit-identical.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "engine.h"
#include "perseus/variables.h"

namespace perseus::engine {
namespace {

constexpr size_t kMaxSlots = 4;  // slices in flight per stream (scratch: a fused group and its fp16 copy each)

}  // namespace

std::unique_ptr<Pipeline> Engine::make_pipeline(Stream& s) {
  // stage plans: steps (indices into `steps`) run on one thread; a collective is always alone
  auto steps = std::make_shared<std::vector<WireStep>>(wire_steps(s.groups, policy_));
  struct Plan {
    bool collective;
    std::vector<size_t> steps;
  };
  std::vector<Plan> plans{{false, {}}};  // the gather stage
  for (size_t i = 0; i < steps->size(); ++i) {
    if ((*steps)[i].group != nullptr) {
      plans.push_back({true, {i}});
    } else if (plans.back().collective) {
      plans.push_back({false, {i}});
    } else {
      plans.back().steps.push_back(i);
    }
  }
  if (plans.back().collective) plans.push_back({false, {}});  // the scatter stage
  std::vector<Pipeline::Stage> stages;
  const size_t last = plans.size() - 1;
  s.stage_names.clear();
  for (size_t j = 0; j < plans.size(); ++j) {
    std::string name = j == 0 ? "gather" : "";
    for (size_t i : plans[j].steps) name += (name.empty() ? "" : "+") + std::string((*steps)[i].what);
    if (j == last) name += name.empty() ? "scatter" : "+scatter";
    s.stage_names.push_back(name);
  }
  for (size_t j = 0; j < plans.size(); ++j) {
    stages.push_back([this, &s, steps, plan = plans[j], first = j == 0, end = j == last](size_t slot) {
      FusedSlice& f = s.slices[slot];
      if (first) begin_slice(f);
      for (size_t i : plan.steps) run_step(f, (*steps)[i]);
      if (end) end_slice(f);
    });
  }
  const size_t slots = std::min(kMaxSlots, stages.size());
  s.slices.resize(slots);
  return std::make_unique<Pipeline>(std::move(stages), slots, [] { block_sigpipe(); });
}

void Engine::run_allreduce_fp32(Stream& s, std::shared_ptr<std::vector<std::shared_ptr<Op>>> ops,
                                std::shared_ptr<std::vector<Unit>> units, int reduce_op,
                                std::function<void()> on_done) {
  const size_t slot = s.pipeline->acquire();
  FusedSlice& f = s.slices[slot];
  f.ops = std::move(ops);
  f.units = std::move(units);
  f.reduce_op = reduce_op;
  f.on_done = std::move(on_done);
  s.pipeline->push(slot);
}

void Engine::fail_slice(FusedSlice& f, perseus_engine_status status, const std::string& message) {
  f.failed = true;
  f.status = status;
  f.message = message;
}

void Engine::begin_slice(FusedSlice& f) {
  f.failed = false;
  f.status = PERSEUS_ENGINE_OK;
  f.message.clear();
  f.wire.n = 0;
  f.wire.nonfinite = 0;
  f.wire.collectives = 0;
  perseus_engine_status refused;
  std::string why;
  if (refused_after_failure(refused, why)) {
    fail_slice(f, refused, why);
    f.in_place = true;  // nothing gathered: nothing to scatter
    return;
  }
  const auto& ops = *f.ops;
  const auto& units = *f.units;
  const Unit& first = units[0];
  // One unit (a whole tensor, or one slice of a large one) is contiguous in the caller's buffer: the steps
  // run on it where it lies. Gathering such a slice and scattering it back cost two copies of every byte of
  // a large gradient, on the cores that backward needs.
  f.in_place = units.size() == 1;
  uint64_t n = 0;
  for (const auto& u : units) n += u.numel;
  float* payload = nullptr;
  if (f.in_place) {
    payload = static_cast<float*>(ops[first.tensor]->data) + first.offset;
  } else {
    if (f.fusion.size() < n) f.fusion.resize(n);
    payload = f.fusion.data();
    uint64_t at = 0;
    for (const auto& u : units) {
      std::memcpy(payload + at, static_cast<float*>(ops[u.tensor]->data) + u.offset, u.numel * 4);
      at += u.numel;
    }
    ++fused_groups_;
  }
  f.wire.data = payload;
  f.wire.n = n;
  f.wire.divisor = f.reduce_op == PERSEUS_ENGINE_AVERAGE ? options_.size : 1;
  f.wire.count_nonfinite = options_.nancheck != 0;
}

void Engine::run_step(FusedSlice& f, const WireStep& step) {
  if (f.failed || f.wire.n == 0) return;
  if (step.group != nullptr) {
    // another slice failed since this one began: the others will not meet this collective
    perseus_engine_status refused;
    std::string why;
    if (refused_after_failure(refused, why)) {
      fail_slice(f, refused, why);
      return;
    }
  }
  try {
    step.run(f.wire);
  } catch (const std::exception& e) {
    const auto& units = *f.units;
    std::string message = collective_error((*f.ops)[units[0].tensor]->request, e.what());
    std::string deviation = abort_after_failure();
    if (!deviation.empty()) message = deviation;
    fail_slice(f, deviation.empty() ? PERSEUS_ENGINE_COMMUNICATION : PERSEUS_ENGINE_MISMATCH, message);
    set_failure(message);
  }
}

void Engine::end_slice(FusedSlice& f) {
  const auto& ops = *f.ops;
  const auto& units = *f.units;
  collectives_ += f.wire.collectives;
  if (!f.failed && options_.nancheck && f.wire.nonfinite > 0) {
    std::string names;
    for (const auto& u : units) {
      const std::string& nm = ops[u.tensor]->request.name;
      if (names.find("'" + nm + "'") == std::string::npos) names += (names.empty() ? "'" : ", '") + nm + "'";
    }
    f.status = PERSEUS_ENGINE_NONFINITE;
    f.message = "PERSEUS_ALLREDUCE_NANCHECK: the reduced result of " + names + " is not finite (inf or NaN) in " +
                std::to_string(f.wire.nonfinite) + " element(s). A loss that grows too large can overflow fp16 "
                "after the gradient scale: lower PERSEUS_ALLREDUCE_GRADIENT_SCALE or find the layer that produces it";
  }
  if (!f.in_place && !f.failed) {  // a failed collective leaves the tensors as they were
    uint64_t at = 0;
    for (const auto& u : units) {
      std::memcpy(static_cast<float*>(ops[u.tensor]->data) + u.offset, f.wire.data + at, u.numel * 4);
      at += u.numel;
    }
  }
  for (const auto& u : units) ops[u.tensor]->part_done(f.status, f.message);
  if (f.on_done) f.on_done();
  f.ops.reset();
  f.units.reset();
  f.on_done = nullptr;
}

void Engine::print_profile(const Stream& s) const {
  const char* flag = std::getenv(PERSEUS_ENV_ENGINE_PROFILE);
  if (flag == nullptr || std::string(flag) != "1" || !s.pipeline || s.pipeline->passed() == 0) return;
  std::string line = "perseus-engine-profile {\"rank\": " + std::to_string(options_.rank) +
                     ", \"stream\": " + std::to_string(s.index) + ", \"slices\": " +
                     std::to_string(s.pipeline->passed()) + ", \"busy_s\": {";
  const auto busy = s.pipeline->busy_seconds();
  for (size_t i = 0; i < busy.size(); ++i) {
    char value[32];
    std::snprintf(value, sizeof(value), "%.6f", busy[i]);
    line += (i ? ", \"" : "\"") + std::to_string(i) + " " + s.stage_names[i] + "\": " + value;
  }
  line += "}}\n";
  std::fputs(line.c_str(), stderr);
}

}  // namespace perseus::engine
