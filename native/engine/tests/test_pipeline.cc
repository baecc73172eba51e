// The stream pipeline: the Pipeline class alone, and the engine's pipelined fp32 allreduce against the
// policy's steps run one after the other (wire.cc's allreduce_fp32, what the engine did before the
// pipeline) on separate Gloo groups: bit for bit, with many slices, odd sizes, 1 and 2 levels.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <thread>

#include "engine.h"
#include "gloo/transport/tcp/device.h"
#include "options.h"
#include "pipeline.h"
#include "plan.h"
#include "tcp_store.h"
#include "wire.h"

using namespace perseus::engine;

TEST(Pipeline, EveryStageSeesTheSlotsInPushOrderAndStagesOverlap) {
  constexpr size_t kItems = 12;
  std::mutex mu;
  std::vector<std::vector<int>> seen(3);
  std::vector<int> item_of(2, -1);  // what each slot carries
  std::atomic<int> busy{0}, most_busy{0};
  auto stage = [&](size_t index, int sleep_ms) {
    return [&, index, sleep_ms](size_t slot) {
      int now = ++busy;
      int prev = most_busy.load();
      while (now > prev && !most_busy.compare_exchange_weak(prev, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
      {
        std::lock_guard<std::mutex> lock(mu);
        seen[index].push_back(item_of[slot]);
      }
      --busy;
    };
  };
  {
    Pipeline p({stage(0, 2), stage(1, 5), stage(2, 1)}, 2, nullptr);
    EXPECT_EQ(p.stages(), 3u);
    for (size_t k = 0; k < kItems; ++k) {
      size_t slot = p.acquire();
      item_of[slot] = int(k);  // free: the slot left the last stage
      p.push(slot);
    }
    p.drain();
    for (const auto& s : seen) EXPECT_EQ(s.size(), kItems);
  }
  for (const auto& s : seen) {
    for (size_t k = 0; k < s.size(); ++k) EXPECT_EQ(s[k], int(k));
  }
  EXPECT_GE(most_busy.load(), 2);  // two slots in two stages at once
  EXPECT_LE(most_busy.load(), 2);  // never more slices in flight than slots
}

namespace {

int free_port() {
  TcpStoreServer probe("127.0.0.1", 0);
  return probe.port();
}

struct Layout {
  int size, per_node, wire_dtype, mode, streams;
};

// Rank r of the layout, on the store at `port`, without stream tuning.
perseus_engine_options layout_options(const Layout& c, int r, int port) {
  perseus_engine_options o;
  default_options(&o);
  o.rank = r;
  o.size = c.size;
  o.local_rank = r % c.per_node;
  o.local_size = c.per_node;
  o.node_rank = r / c.per_node;
  o.master_port = port;
  o.wire_dtype = c.wire_dtype;
  o.mode = c.mode;
  o.streams = c.streams;
  o.stream_tuning = 0;
  o.timeout_seconds = 30;
  std::strcpy(o.master_addr, "127.0.0.1");
  return o;
}

void expect_completes_ok(Engine& e, int64_t handle) {
  auto op = e.find(handle);
  std::unique_lock<std::mutex> lock(op->mu);
  op->cv.wait(lock, [&] { return op->done; });
  EXPECT_EQ(op->status, PERSEUS_ENGINE_OK) << op->error;
}

// Odd sizes around the partition (2 MiB, 512 Ki floats) and twice it, an empty tensor, and many small ones.
std::vector<int64_t> sizes() {
  std::vector<int64_t> out = {1, 3, 0, 524287, 524289, 1048575, 1048577, 2 * 1048576 + 13, 7, 65537, 333333, 5};
  for (int i = 0; i < 30; ++i) out.push_back(1 + 977 * i);
  return out;
}

std::vector<float> values(int rank, size_t tensor, int64_t n) {
  std::mt19937 gen(uint32_t(1000 * rank + tensor));
  std::uniform_real_distribution<float> d(-4.f, 4.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(gen);
  return v;
}

// Each tensor whole through the policy's steps in a row (no pipeline), on groups of their own: with
// two ranks per group, as here, a sum does not depend on how Gloo chunks the buffer, so the engine's
// fused and partitioned slices must give the same bits.
std::vector<std::vector<float>> reference(const Layout& c, int r, int store_port, const perseus_engine_options& o) {
  const auto shape = sizes();
  const std::chrono::milliseconds timeout(30000);
  TcpStore store("127.0.0.1", store_port, timeout);
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  const int nodes = c.size / c.per_node, node = r / c.per_node, local = r % c.per_node;
  StreamGroups g;
  g.everyone = std::make_unique<Group>("ref/all", r, c.size, store, device, timeout);
  const WirePolicy p = wire_policy(c.wire_dtype, c.mode, o.gradient_scale, nodes, c.per_node);
  if (p.hierarchical) {
    g.node = std::make_unique<Group>("ref/node" + std::to_string(node), local, c.per_node, store, device, timeout);
    if (local == 0) g.leaders = std::make_unique<Group>("ref/leaders", node, nodes, store, device, timeout);
  }
  std::vector<std::vector<float>> out;
  for (size_t t = 0; t < shape.size(); ++t) {
    out.push_back(values(r, t, shape[t]));
    WireSlice s;
    s.data = out.back().data();
    s.n = uint64_t(shape[t]);
    s.divisor = t % 3 == 0 ? 1 : c.size;
    allreduce_fp32(g, p, s);
  }
  g.everyone->barrier();
  return out;
}

void run_case(const Layout& c) {
  const int port = free_port();
  TcpStoreServer reference_store("127.0.0.1", 0);
  const auto shape = sizes();
  std::vector<std::vector<std::vector<float>>> got(size_t(c.size)), want(size_t(c.size));
  std::vector<std::thread> threads;
  for (int r = 0; r < c.size; ++r) {
    threads.emplace_back([&, r] {
      const perseus_engine_options o = layout_options(c, r, port);
      want[size_t(r)] = reference(c, r, reference_store.port(), o);
      std::vector<std::vector<float>> data;
      Engine e(o);
      EXPECT_EQ(e.info().hierarchical, c.per_node > 1 && c.size > c.per_node && (c.wire_dtype == 2 || c.mode == 1));
      std::vector<int64_t> handles;
      for (size_t t = 0; t < shape.size(); ++t) data.push_back(values(r, t, shape[t]));
      for (size_t t = 0; t < shape.size(); ++t) {
        Request q;
        q.name = "t" + std::to_string(t);
        q.kind = Kind::kAllreduce;
        q.dtype = PERSEUS_ENGINE_FLOAT32;
        q.shape = {shape[t]};
        q.op = t % 3 == 0 ? PERSEUS_ENGINE_SUM : PERSEUS_ENGINE_AVERAGE;
        handles.push_back(e.submit(q, data[t].data(), nullptr));
      }
      for (int64_t h : handles) expect_completes_ok(e, h);
      EXPECT_GT(e.info().fused_groups, 0u);
      if (e.info().hierarchical) {  // equal nodes: every rank, not only the leader, carries a part between them
        uint64_t bytes = 0, calls = 0;
        e.wire_bytes("leaders", c.wire_dtype == 1 ? PERSEUS_ENGINE_FLOAT32 : PERSEUS_ENGINE_FLOAT16, bytes, calls);
        EXPECT_GT(bytes, 0u) << "rank " << r;
      }
      e.shutdown();
      got[size_t(r)] = std::move(data);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < c.size; ++r) {
    for (size_t t = 0; t < shape.size(); ++t) {
      ASSERT_EQ(got[size_t(r)][t].size(), want[size_t(r)][t].size());
      if (shape[t] == 0) continue;
      ASSERT_EQ(std::memcmp(got[size_t(r)][t].data(), want[size_t(r)][t].data(), size_t(shape[t]) * 4), 0)
          << "rank " << r << " tensor " << t << " (" << shape[t] << " elements) differs from the serial steps";
      // the reduction happened: rank 0's input is not the result
      EXPECT_NE(std::memcmp(got[size_t(r)][t].data(), values(r, t, shape[t]).data(), size_t(shape[t]) * 4), 0);
    }
  }
}

}  // namespace

// A tensor above the slice size, alone in its cycle: each slice is a contiguous range of the caller's
// buffer and is reduced where it lies (no gather into a fusion buffer, no scatter back).
TEST(EnginePipeline, SlicesOfOneTensorAreReducedWhereTheyLie) {
  const Layout c{2, 1, 1, -1, 1};  // one level, fp32, one stream
  const int size = c.size;
  const int port = free_port();
  const int64_t n = int64_t(5 * kPartitionBytes / 8) + 7;  // two and a half slices and a few elements
  std::vector<std::vector<float>> got(size);
  std::vector<uint64_t> gathered(size, 1);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      std::vector<float> data(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) data[size_t(i)] = float((i % 1000) * (r + 1));  // sums exact in fp32
      Engine e(layout_options(c, r, port));
      Request q;
      q.name = "big";
      q.kind = Kind::kAllreduce;
      q.dtype = PERSEUS_ENGINE_FLOAT32;
      q.shape = {n};
      q.op = PERSEUS_ENGINE_SUM;
      expect_completes_ok(e, e.submit(q, data.data(), nullptr));
      gathered[size_t(r)] = e.info().fused_groups;
      e.shutdown();
      got[size_t(r)] = std::move(data);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < size; ++r) {
    EXPECT_EQ(gathered[size_t(r)], 0u) << "rank " << r << " copied a slice of one tensor into a fusion buffer";
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[size_t(r)][size_t(i)], float((i % 1000) * 3)) << "rank " << r << " element " << i;
    }
  }
}

TEST(EnginePipeline, TwoByTwoNodesDtype2BitIdenticalToTheSerialSteps) { run_case({4, 2, 2, -1, 1}); }
TEST(EnginePipeline, TwoByTwoNodesFp16Mode1BitIdenticalToTheSerialSteps) { run_case({4, 2, 0, 1, 1}); }
TEST(EnginePipeline, TwoByTwoNodesDtype2TwoStreams) { run_case({4, 2, 2, -1, 2}); }
TEST(EnginePipeline, OneLevelFp16BitIdenticalToTheSerialSteps) { run_case({2, 1, 0, -1, 1}); }
TEST(EnginePipeline, OneLevelFp32BitIdenticalToTheSerialSteps) { run_case({2, 1, 1, -1, 1}); }
