// The engine end to end inside one process: ranks are threads, each with its own Engine (store,
// Gloo groups, negotiation). The multi-process runs are tests/engine (pytest).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <thread>

#include "engine.h"
#include "errors.h"
#include "options.h"
#include "perseus/core.h"
#include "tcp_store.h"

using namespace perseus::engine;

namespace {

int free_port() {
  TcpStoreServer probe("127.0.0.1", 0);
  return probe.port();
}

perseus_engine_options options(int rank, int size, int port, int wire_dtype) {
  perseus_engine_options o;
  default_options(&o);
  o.rank = rank;
  o.size = size;
  o.master_port = port;
  o.wire_dtype = wire_dtype;
  o.timeout_seconds = 20;
  std::strcpy(o.master_addr, "127.0.0.1");
  return o;
}

// Runs body(engine, rank) on `size` threads; rethrows nothing (gtest assertions inside are per thread).
void run_ranks(int size, int wire_dtype, const std::function<void(Engine&, int)>& body) {
  int port = free_port();
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([=] {
      Engine engine(options(r, size, port, wire_dtype));
      body(engine, r);
      engine.shutdown();
    });
  }
  for (auto& t : threads) t.join();
}

void wait(Engine& e, int64_t h) {
  auto op = e.find(h);
  std::unique_lock<std::mutex> lock(op->mu);
  op->cv.wait(lock, [&] { return op->done; });
}

Request allreduce(const std::string& name, int64_t n, int op) {
  Request r;
  r.name = name;
  r.kind = Kind::kAllreduce;
  r.dtype = PERSEUS_ENGINE_FLOAT32;
  r.shape = {n};
  r.op = op;
  return r;
}

}  // namespace

TEST(EngineThreads, AllreduceAverageFp32InDifferentSubmissionOrders) {
  run_ranks(2, /*wire_dtype=*/1, [](Engine& e, int rank) {
    std::vector<float> a(1000, float(rank + 1)), b(10, float(10 * (rank + 1)));
    int64_t ha, hb;
    if (rank == 0) {
      ha = e.submit(allreduce("a", 1000, PERSEUS_ENGINE_AVERAGE), a.data(), nullptr);
      hb = e.submit(allreduce("b", 10, PERSEUS_ENGINE_SUM), b.data(), nullptr);
    } else {
      hb = e.submit(allreduce("b", 10, PERSEUS_ENGINE_SUM), b.data(), nullptr);
      ha = e.submit(allreduce("a", 1000, PERSEUS_ENGINE_AVERAGE), a.data(), nullptr);
    }
    wait(e, ha);
    wait(e, hb);
    EXPECT_EQ(e.find(ha)->status, PERSEUS_ENGINE_OK) << e.find(ha)->error;
    EXPECT_EQ(e.find(hb)->status, PERSEUS_ENGINE_OK) << e.find(hb)->error;
    for (float v : a) ASSERT_EQ(v, 1.5f);
    for (float v : b) ASSERT_EQ(v, 30.0f);
  });
}

TEST(EngineThreads, Fp16WireRoundsLikeTheCore) {
  run_ranks(2, /*wire_dtype=*/0, [](Engine& e, int rank) {
    const float mine[2] = {0.0123457f, 0.0234567f};
    std::vector<float> x(64, mine[rank]);
    int64_t h = e.submit(allreduce("x", 64, PERSEUS_ENGINE_SUM), x.data(), nullptr);
    wait(e, h);
    ASSERT_EQ(e.find(h)->status, PERSEUS_ENGINE_OK) << e.find(h)->error;
    // expected: half(a * 10) + half(b * 10), rounded to half, times 1 / 10 (the core's kernels)
    uint16_t ha, hb, hs;
    uint64_t nf;
    perseus_compress(&mine[0], &ha, PERSEUS_FLOAT16, 1, 10.f, &nf);
    perseus_compress(&mine[1], &hb, PERSEUS_FLOAT16, 1, 10.f, &nf);
    float fa, fb, expected;
    perseus_decompress(&ha, PERSEUS_FLOAT16, &fa, 1, 1.f, 1, &nf);
    perseus_decompress(&hb, PERSEUS_FLOAT16, &fb, 1, 1.f, 1, &nf);
    float sum = fa + fb;
    perseus_compress(&sum, &hs, PERSEUS_FLOAT16, 1, 1.f, &nf);
    perseus_decompress(&hs, PERSEUS_FLOAT16, &expected, 1, 10.f, 1, &nf);
    for (float v : x) ASSERT_EQ(v, expected);
    EXPECT_NE(expected, mine[0] + mine[1]);  // fp16 crossed the wire: not the fp32 sum
    EXPECT_GE(e.info().collectives, 1u);
  });
}

TEST(EngineThreads, ShapeMismatchFailsOnEveryRankWithTheSameMessage) {
  std::string messages[2];
  run_ranks(2, 1, [&](Engine& e, int rank) {
    std::vector<float> x(8, 1.0f);
    int64_t h = e.submit(allreduce("w", rank == 0 ? 4 : 8, PERSEUS_ENGINE_SUM), x.data(), nullptr);
    wait(e, h);
    EXPECT_EQ(e.find(h)->status, PERSEUS_ENGINE_MISMATCH);
    messages[rank] = e.find(h)->error;
    // the engine keeps working after a mismatch
    int64_t h2 = e.submit(allreduce("w2", 8, PERSEUS_ENGINE_SUM), x.data(), nullptr);
    wait(e, h2);
    EXPECT_EQ(e.find(h2)->status, PERSEUS_ENGINE_OK);
    EXPECT_EQ(x[0], 2.0f);
  });
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_NE(messages[0].find("rank 0 submitted allreduce float32[4] sum"), std::string::npos) << messages[0];
}

TEST(EngineThreads, DuplicateNameInFlightIsRefused) {
  std::atomic<bool> refused{false};
  run_ranks(2, 1, [&](Engine& e, int rank) {
    std::vector<float> x(4, 1.0f);
    if (rank == 0) {
      // rank 1 has not submitted "dup" yet, so it stays in flight here
      int64_t h = e.submit(allreduce("dup", 4, PERSEUS_ENGINE_SUM), x.data(), nullptr);
      try {
        e.submit(allreduce("dup", 4, PERSEUS_ENGINE_SUM), x.data(), nullptr);
      } catch (const EngineError& err) {
        EXPECT_EQ(err.status(), PERSEUS_ENGINE_INVALID_ARGUMENT);
        EXPECT_NE(std::string(err.what()).find("already in flight"), std::string::npos) << err.what();
        refused = true;
      }
      std::vector<float> go(1, 0.0f);
      int64_t g = e.submit(allreduce("go", 1, PERSEUS_ENGINE_SUM), go.data(), nullptr);  // lets rank 1 go on
      wait(e, g);
      wait(e, h);
      EXPECT_EQ(e.find(h)->status, PERSEUS_ENGINE_OK) << e.find(h)->error;
    } else {
      std::vector<float> go(1, 0.0f);
      int64_t g = e.submit(allreduce("go", 1, PERSEUS_ENGINE_SUM), go.data(), nullptr);
      wait(e, g);
      int64_t h = e.submit(allreduce("dup", 4, PERSEUS_ENGINE_SUM), x.data(), nullptr);
      wait(e, h);
    }
    EXPECT_EQ(x[0], 2.0f);
  });
  EXPECT_TRUE(refused.load());
}
