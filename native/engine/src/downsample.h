// Gossip downsampling of gradient allreduces (PERSEUS_DOWNSAMPLE_N_ELEMENTS = n,
// PERSEUS_GRADIENT_MOMENTUM = m), in front of the wire policy: at the k-th allreduce of a name only
// the elements i with i % n == k % n cross the network (the core's gather/scatter kernels); the others
// keep their gradient in a per-name residual (decayed by m per step) until their turn, and read 0 in
// the result. The reduced slice goes through the ordinary allreduce (fusion, fp16 wire, two levels)
// under the name "<name>#ds<k % n>", whose shape is the same every n-th step.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace perseus::engine {

class Downsampler {
 public:
  struct Slice {
    std::string name;  // the inner allreduce's name
    float* data;       // what to allreduce (owned by this object until complete/forget)
    uint64_t count;
  };
  // Gathers this step's elements of `gradient` (numel fp32) into a slice and advances the name's step.
  Slice begin(const std::string& name, float* gradient, uint64_t numel, uint64_t n, float momentum);
  // Binds the slice begun last to the engine handle that carries it.
  void bind(int64_t handle);
  // The inner allreduce of `handle` succeeded: scatter the slice into the gradient (unsent elements 0).
  // A handle that is not a downsampled one is ignored; each pending handle is completed once.
  void complete(int64_t handle);
  void forget(int64_t handle);  // released without completion (an error)
  // The slice begun last was not submitted (its submission failed): undo its step.
  void abandon();

 private:
  struct State {
    std::vector<float> residual;
    uint64_t step = 0;
  };
  struct Pending {
    float* gradient;
    uint64_t numel, n, step;
    std::unique_ptr<std::vector<float>> sent;
  };
  std::mutex mu_;
  std::map<std::string, State> states_;
  std::unique_ptr<Pending> last_;
  std::string last_name_;
  std::map<int64_t, std::unique_ptr<Pending>> pending_;
};

}  // namespace perseus::engine
