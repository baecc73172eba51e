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

uint16_t* compress(const float* data, uint64_t n, float scale, std::vector<uint16_t>& half) {
  if (half.size() < n) half.resize(n);
  uint64_t nonfinite = 0;
  check(perseus_compress(data, half.data(), PERSEUS_FLOAT16, n, scale, &nonfinite));
  return half.data();
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

}  // namespace

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

uint64_t allreduce_fp32(StreamGroups& g, const WirePolicy& p, float* data, uint64_t n, int64_t divisor,
                        bool count_nonfinite, std::vector<uint16_t>& half, uint64_t& collectives) {
  if (n == 0) return 0;
  if (!p.hierarchical) {
    if (p.intra_fp16 && p.inter_fp16) {
      uint16_t* h = compress(data, n, p.scale, half);
      g.everyone->allreduce_sum(h, n, PERSEUS_ENGINE_FLOAT16);
      ++collectives;
      return decompress(h, data, n, p.scale, divisor);
    }
    g.everyone->allreduce_sum(data, n, PERSEUS_ENGINE_FLOAT32);
    ++collectives;
    return finish_plain(data, n, divisor, count_nonfinite);
  }
  Group& node = *g.node;
  if (p.intra_fp16) {
    uint16_t* h = compress(data, n, p.scale, half);
    node.reduce_sum(h, n, PERSEUS_ENGINE_FLOAT16, g.node_leader);
    if (g.leaders) g.leaders->allreduce_sum(h, n, PERSEUS_ENGINE_FLOAT16);
    node.broadcast(h, n * 2, g.node_leader, PERSEUS_ENGINE_FLOAT16);
    collectives += g.leaders ? 3 : 2;
    return decompress(h, data, n, p.scale, divisor);
  }
  node.reduce_sum(data, n, PERSEUS_ENGINE_FLOAT32, g.node_leader);
  ++collectives;
  uint64_t nonfinite = 0;
  if (g.leaders) {
    if (p.inter_fp16) {
      uint16_t* h = compress(data, n, p.scale, half);
      g.leaders->allreduce_sum(h, n, PERSEUS_ENGINE_FLOAT16);
      nonfinite = decompress(h, data, n, p.scale, divisor);
    } else {
      g.leaders->allreduce_sum(data, n, PERSEUS_ENGINE_FLOAT32);
      nonfinite = finish_plain(data, n, divisor, count_nonfinite);
    }
    ++collectives;
  }
  node.broadcast(data, n * 4, g.node_leader, PERSEUS_ENGINE_FLOAT32);
  ++collectives;
  if (!g.leaders && count_nonfinite) nonfinite = finish_plain(data, n, 1, true);
  return nonfinite;
}

}  // namespace perseus::engine
