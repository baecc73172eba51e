// The wire policy of fp32 allreduce (PERSEUS_ALLREDUCE_DTYPE / _MODE / _GRADIENT_SCALE) and its steps
// over one stream's groups, with the semantics of the Python engine (perseus/torch/_engine.py):
//   one level, fp16:  compress(x * scale) -> fp16 allreduce -> decompress(/ (scale * world))
//   one level, fp32:  fp32 allreduce -> / world
//   two levels:       when every node has as many ranks (Horovod's hierarchical allreduce): a
//                     reduce-scatter inside the node, so each local rank holds the node's sum of one
//                     part; an allreduce of that part among the ranks with the same local rank on every
//                     node; an allgather inside the node. Otherwise: reduce inside the node to its
//                     leader, allreduce among node leaders, broadcast inside the node. fp16 on a level
//                     where the policy says so; both give the same bits with two ranks per node.
#pragma once

#include <cstdint>
#include <functional>
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
  std::unique_ptr<Group> node;        // two levels only: the reduce to the node's leader
  std::unique_ptr<Group> node_bcast;  // two levels only: the broadcast from it (null: `node` does both)
  std::unique_ptr<Group> leaders;     // two levels on unequal nodes, on node leaders only
  std::unique_ptr<Group> peers;       // two levels on equal nodes: this local rank's group across the nodes
  int node_leader = 0;                // rank of the node's leader within `node`

  // The group that carries the traffic between nodes on this rank (null: none on this rank).
  Group* between_nodes() const { return peers ? peers.get() : leaders.get(); }
  // The groups whose members all sit on this rank's node (`one_node`: the job is one node, so `everyone`
  // is one of them); null entries where a group does not exist.
  std::vector<Group*> inside_node(bool one_node) const {
    return {node.get(), node_bcast.get(), one_node ? everyone.get() : nullptr};
  }
};

// The part of n elements each of `parts` local ranks reduces between nodes: n / parts each, the first
// n % parts one more.
std::vector<uint64_t> shard_counts(uint64_t n, int parts);

// One fp32 allreduce in flight: n elements at `data`, reduced in place; divided by `divisor` (world size
// for average, 1 for sum). `nonfinite`: the non-finite results (counted when `count_nonfinite` or fp16 is
// used); `collectives` grows by the Gloo collectives issued. `half` is scratch, kept between slices.
struct WireSlice {
  float* data = nullptr;
  uint64_t n = 0;
  int64_t divisor = 1;
  bool count_nonfinite = false;
  std::vector<uint16_t> half;
  std::vector<char> scratch;  // a received part of the node's reduce-scatter
  uint64_t nonfinite = 0;
  uint64_t collectives = 0;
};

// One step of the policy on this rank: local work (group == nullptr: compress, decompress, divide) or
// one collective on one Gloo context. Run in order they are the allreduce; the engine runs each on its
// own pipeline stage, so different slices are in different steps at once (the contexts differ per step).
struct WireStep {
  const char* what;
  Group* group;
  std::function<void(WireSlice&)> run;  // throws what Gloo throws (a lost peer, a timeout)
};

// The steps of this rank (a node leader has more than the others) for the policy over `g`.
std::vector<WireStep> wire_steps(StreamGroups& g, const WirePolicy& p);

// The steps one after the other on this thread (a slice that is not pipelined; the tests' reference).
void allreduce_fp32(StreamGroups& g, const WirePolicy& p, WireSlice& slice);
// The same on n elements at `data`, `half` as scratch; returns the non-finite count and adds the collectives
// issued to `collectives` (the device backend's host-staged path).
uint64_t allreduce_fp32(StreamGroups& g, const WirePolicy& p, float* data, uint64_t n, int64_t divisor,
                        bool count_nonfinite, std::vector<uint16_t>& half, uint64_t& collectives);

}  // namespace perseus::engine
