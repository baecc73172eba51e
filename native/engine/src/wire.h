// The wire policy of fp32 allreduce (PERSEUS_ALLREDUCE_DTYPE / _MODE / _GRADIENT_SCALE) and its
// pipeline over one stream's groups, with the semantics of the Python engine (perseus/torch/_engine.py):
//   one level, fp16:  compress(x * scale) -> fp16 allreduce -> decompress(/ (scale * world))
//   one level, fp32:  fp32 allreduce -> / world
//   two levels:       reduce inside the node to its leader, allreduce among node leaders, broadcast
//                     inside the node; fp16 on a level where the policy says so.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "group.h"

namespace perseus::engine {

struct WirePolicy {
  bool hierarchical = false;
  bool intra_fp16 = true;  // inside a node (and on the single level of a one-node job)
  bool inter_fp16 = true;  // between node leaders (and on the single level of a one-rank-per-node job)
  float scale = 10.0f;
};

// wire_dtype 0/1/2, mode -1/0/1; largest_node: the most ranks any node has.
WirePolicy wire_policy(int wire_dtype, int mode, float scale, int num_nodes, int largest_node);

struct StreamGroups {
  std::unique_ptr<Group> everyone;
  std::unique_ptr<Group> node;     // two levels only
  std::unique_ptr<Group> leaders;  // two levels, on node leaders only
  int node_leader = 0;             // rank of the node's leader within `node`
};

// Reduces n fp32 elements in place over all ranks; divides by `divisor` (world size for average, 1 for
// sum). Returns the number of non-finite results (counted when `count_nonfinite` or fp16 is used).
// `collectives` grows by the Gloo collectives issued. `half` is scratch reused between calls.
uint64_t allreduce_fp32(StreamGroups& g, const WirePolicy& p, float* data, uint64_t n, int64_t divisor,
                        bool count_nonfinite, std::vector<uint16_t>& half, uint64_t& collectives);

}  // namespace perseus::engine
