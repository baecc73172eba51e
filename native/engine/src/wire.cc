#include "wire.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "perseus/core.h"
#include "perseus/engine.h"

namespace perseus::engine {
namespace {

void check(perseus_status s) {
  if (s != PERSEUS_OK) throw std::runtime_error(std::string("perseus core: ") + perseus_last_error());
}

void compress_into(const float* data, uint64_t n, float scale, uint16_t* half) {
  uint64_t nonfinite = 0;
  check(perseus_compress(data, half, PERSEUS_FLOAT16, n, scale, &nonfinite));
}

void compress(const float* data, uint64_t n, float scale, std::vector<uint16_t>& half) {
  if (half.size() < n) half.resize(n);
  compress_into(data, n, scale, half.data());
}

uint64_t decompress(const uint16_t* half, float* data, uint64_t n, float scale, int64_t divisor) {
  uint64_t nonfinite = 0;
  check(perseus_decompress(half, PERSEUS_FLOAT16, data, n, scale, divisor, &nonfinite));
  return nonfinite;
}

uint64_t finish_plain(float* data, uint64_t n, int64_t divisor, bool count_nonfinite) {
  if (divisor > 1) {
    const float f = float(1.0 / double(divisor));
    for (uint64_t i = 0; i < n; ++i) data[i] *= f;
  }
  uint64_t bad = 0;
  if (count_nonfinite) {
    for (uint64_t i = 0; i < n; ++i) bad += std::isfinite(data[i]) ? 0 : 1;
  }
  return bad;
}

// The local steps on the whole slice: fp16 copy of data * scale, and back (/ (scale * divisor)).
WireStep compress_step(float scale) {
  return {"compress", nullptr, [scale](WireSlice& s) { compress(s.data, s.n, scale, s.half); }};
}

WireStep decompress_step(float scale) {
  return {"decompress", nullptr,
          [scale](WireSlice& s) { s.nonfinite = decompress(s.half.data(), s.data, s.n, scale, s.divisor); }};
}

// Two levels on equal nodes: node reduce-scatter, the part's allreduce among peers, node allgather.
std::vector<WireStep> sharded_steps(StreamGroups& g, const WirePolicy& p) {
  std::vector<WireStep> steps;
  const float scale = p.scale;
  Group* node = g.node.get();
  Group* gather = g.node_bcast ? g.node_bcast.get() : node;
  Group* peers = g.peers.get();
  const int parts = node->size(), mine = node->rank();
  struct Part {
    uint64_t offset, n;
  };
  auto part = [parts, mine](const WireSlice& s) {
    const auto counts = shard_counts(s.n, parts);
    uint64_t offset = 0;
    for (int r = 0; r < mine; ++r) offset += counts[size_t(r)];
    return Part{offset, counts[size_t(mine)]};
  };
  if (p.intra_fp16) {
    steps.push_back(compress_step(scale));
    steps.push_back({"node reduce-scatter fp16", node, [node, parts](WireSlice& s) {
                       node->reduce_scatter_sum(s.half.data(), shard_counts(s.n, parts), PERSEUS_ENGINE_FLOAT16,
                                                s.scratch);
                       ++s.collectives;
                     }});
    steps.push_back({"peers allreduce fp16", peers, [peers, part](WireSlice& s) {
                       const Part q = part(s);
                       peers->allreduce_sum(s.half.data() + q.offset, q.n, PERSEUS_ENGINE_FLOAT16);
                       ++s.collectives;
                     }});
    steps.push_back({"node allgather fp16", gather, [gather, parts](WireSlice& s) {
                       gather->allgather_in_place(s.half.data(), shard_counts(s.n, parts), PERSEUS_ENGINE_FLOAT16);
                       ++s.collectives;
                     }});
    steps.push_back(decompress_step(scale));
    return steps;
  }
  steps.push_back({"node reduce-scatter fp32", node, [node, parts](WireSlice& s) {
                     node->reduce_scatter_sum(s.data, shard_counts(s.n, parts), PERSEUS_ENGINE_FLOAT32, s.scratch);
                     ++s.collectives;
                   }});
  if (p.inter_fp16) {
    // The part leaves the node's fp32 sum as fp16, so the node's allgather moves fp16 too (half the bytes
    // inside the node) and every rank decompresses the whole slice: the same fp16 values, the same scale
    // and divisor, so the same fp32 result as decompressing the part before an fp32 allgather.
    steps.push_back({"compress", nullptr, [scale, part](WireSlice& s) {
                       const Part q = part(s);
                       if (s.half.size() < s.n) s.half.resize(s.n);
                       compress_into(s.data + q.offset, q.n, scale, s.half.data() + q.offset);
                     }});
    steps.push_back({"peers allreduce fp16", peers, [peers, part](WireSlice& s) {
                       const Part q = part(s);
                       peers->allreduce_sum(s.half.data() + q.offset, q.n, PERSEUS_ENGINE_FLOAT16);
                       ++s.collectives;
                     }});
    steps.push_back({"node allgather fp16", gather, [gather, parts](WireSlice& s) {
                       gather->allgather_in_place(s.half.data(), shard_counts(s.n, parts), PERSEUS_ENGINE_FLOAT16);
                       ++s.collectives;
                     }});
    steps.push_back(decompress_step(scale));  // counts the non-finite elements of the whole result
    return steps;
  }
  steps.push_back({"peers allreduce fp32", peers, [peers, part](WireSlice& s) {
                     const Part q = part(s);
                     peers->allreduce_sum(s.data + q.offset, q.n, PERSEUS_ENGINE_FLOAT32);
                     ++s.collectives;
                   }});
  steps.push_back({"divide", nullptr, [part](WireSlice& s) {
                     const Part q = part(s);
                     finish_plain(s.data + q.offset, q.n, s.divisor, false);
                   }});
  steps.push_back({"node allgather fp32", gather, [gather, parts](WireSlice& s) {
                     gather->allgather_in_place(s.data, shard_counts(s.n, parts), PERSEUS_ENGINE_FLOAT32);
                     ++s.collectives;
                   }});
  // every rank counts the whole result, so a non-finite element fails the collective on every rank
  steps.push_back({"count", nullptr, [](WireSlice& s) {
                     s.nonfinite = s.count_nonfinite ? finish_plain(s.data, s.n, 1, true) : 0;
                   }});
  return steps;
}

}  // namespace

std::vector<uint64_t> shard_counts(uint64_t n, int parts) {
  std::vector<uint64_t> counts(size_t(parts), n / uint64_t(parts));
  for (uint64_t r = 0; r < n % uint64_t(parts); ++r) ++counts[size_t(r)];
  return counts;
}

WirePolicy wire_policy(int wire_dtype, int mode, float scale, int num_nodes, int largest_node) {
  WirePolicy p;
  p.scale = scale;
  const bool two_possible = num_nodes > 1 && largest_node > 1;  // else one of the levels is empty
  p.hierarchical = two_possible && (mode >= 0 ? mode == 1 : wire_dtype == 2);
  p.intra_fp16 = wire_dtype == 0;
  p.inter_fp16 = wire_dtype == 0 || wire_dtype == 2;
  if (!p.hierarchical && p.intra_fp16 != p.inter_fp16) {
    // one level: all of it is inside one node, or all between nodes (one rank per node)
    p.intra_fp16 = p.inter_fp16 = (num_nodes <= 1 ? p.intra_fp16 : p.inter_fp16);
  }
  return p;
}

std::vector<WireStep> wire_steps(StreamGroups& g, const WirePolicy& p) {
  std::vector<WireStep> steps;
  const float scale = p.scale;
  auto plain_step = [](WireSlice& s) { s.nonfinite = finish_plain(s.data, s.n, s.divisor, s.count_nonfinite); };
  if (!p.hierarchical) {
    Group* all = g.everyone.get();
    if (p.intra_fp16 && p.inter_fp16) {
      steps.push_back(compress_step(scale));
      steps.push_back({"allreduce fp16", all, [all](WireSlice& s) {
                         all->allreduce_sum(s.half.data(), s.n, PERSEUS_ENGINE_FLOAT16);
                         ++s.collectives;
                       }});
      steps.push_back(decompress_step(scale));
      return steps;
    }
    steps.push_back({"allreduce fp32", all, [all](WireSlice& s) {
                       all->allreduce_sum(s.data, s.n, PERSEUS_ENGINE_FLOAT32);
                       ++s.collectives;
                     }});
    steps.push_back({"divide", nullptr, plain_step});
    return steps;
  }
  if (g.peers) return sharded_steps(g, p);
  Group* node = g.node.get();
  Group* bcast = g.node_bcast ? g.node_bcast.get() : node;
  Group* leaders = g.leaders.get();
  const int root = g.node_leader;
  if (p.intra_fp16) {
    steps.push_back(compress_step(scale));
    steps.push_back({"node reduce fp16", node, [node, root](WireSlice& s) {
                       node->reduce_sum(s.half.data(), s.n, PERSEUS_ENGINE_FLOAT16, root);
                       ++s.collectives;
                     }});
    if (leaders) {
      steps.push_back({"leaders allreduce fp16", leaders, [leaders](WireSlice& s) {
                         leaders->allreduce_sum(s.half.data(), s.n, PERSEUS_ENGINE_FLOAT16);
                         ++s.collectives;
                       }});
    }
    steps.push_back({"node broadcast fp16", bcast, [bcast, root](WireSlice& s) {
                       bcast->broadcast(s.half.data(), s.n * 2, root, PERSEUS_ENGINE_FLOAT16);
                       ++s.collectives;
                     }});
    steps.push_back(decompress_step(scale));
    return steps;
  }
  steps.push_back({"node reduce fp32", node, [node, root](WireSlice& s) {
                     node->reduce_sum(s.data, s.n, PERSEUS_ENGINE_FLOAT32, root);
                     ++s.collectives;
                   }});
  if (leaders && p.inter_fp16) {
    steps.push_back(compress_step(scale));
    steps.push_back({"leaders allreduce fp16", leaders, [leaders](WireSlice& s) {
                       leaders->allreduce_sum(s.half.data(), s.n, PERSEUS_ENGINE_FLOAT16);
                       ++s.collectives;
                     }});
    steps.push_back(decompress_step(scale));
  } else if (leaders) {
    steps.push_back({"leaders allreduce fp32", leaders, [leaders](WireSlice& s) {
                       leaders->allreduce_sum(s.data, s.n, PERSEUS_ENGINE_FLOAT32);
                       ++s.collectives;
                     }});
    steps.push_back({"divide", nullptr, plain_step});
  }
  steps.push_back({"node broadcast fp32", bcast, [bcast, root](WireSlice& s) {
                     bcast->broadcast(s.data, s.n * 4, root, PERSEUS_ENGINE_FLOAT32);
                     ++s.collectives;
                   }});
  if (!leaders) {  // the leader divided (and counted) before the broadcast
    steps.push_back({"count", nullptr, [](WireSlice& s) {
                       s.nonfinite = s.count_nonfinite ? finish_plain(s.data, s.n, 1, true) : 0;
                     }});
  }
  return steps;
}

void allreduce_fp32(StreamGroups& g, const WirePolicy& p, WireSlice& slice) {
  if (slice.n == 0) return;
  for (const auto& step : wire_steps(g, p)) step.run(slice);
}

uint64_t allreduce_fp32(StreamGroups& g, const WirePolicy& p, float* data, uint64_t n, int64_t divisor,
                        bool count_nonfinite, std::vector<uint16_t>& half, uint64_t& collectives) {
  WireSlice s;
  s.data = data;
  s.n = n;
  s.divisor = divisor;
  s.count_nonfinite = count_nonfinite;
  s.half.swap(half);
  try {
    allreduce_fp32(g, p, s);
  } catch (...) {
    half.swap(s.half);
    throw;
  }
  half.swap(s.half);
  collectives += s.collectives;
  return s.nonfinite;
}

}  // namespace perseus::engine
