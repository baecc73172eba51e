// Group's collectives over shared memory (shm_channel.h) against the same collectives over Gloo's TCP, on
// members that are threads of this process: the same bits with two members, exact sums with three
// (integer values), many rounds for buffers above the channel's, and a member that leaves or never comes
// failing the others instead of hanging them.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

#include "errors.h"
#include "gloo/transport/tcp/device.h"
#include "group.h"
#include "shm_channel.h"
#include "tcp_store.h"

using namespace perseus::engine;
using namespace std::chrono_literals;

namespace {

constexpr uint64_t kChannelFloats = ShmChannel::kBufferBytes / 4;

// `members` threads, each with a Group named `name` over TCP and (when `shared`) the same over shared
// memory; `body` runs on each with its rank.
void run_members(int members, std::chrono::milliseconds timeout,
                 const std::function<void(int, Group& tcp, Group& shm)>& body) {
  TcpStoreServer server("127.0.0.1", 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < members; ++r) {
    threads.emplace_back([&, r] {
      TcpStore store("127.0.0.1", server.port(), 30s);
      gloo::transport::tcp::attr attr;
      attr.hostname = "127.0.0.1";
      auto device = gloo::transport::tcp::CreateDevice(attr);
      Group tcp("tcp", r, members, store, device, timeout);
      Group shm("shm", r, members, store, device, timeout);
      std::string why;
      ASSERT_TRUE(shm.share_memory(&why)) << why;
      EXPECT_TRUE(shm.shares_memory());
      EXPECT_FALSE(tcp.shares_memory());
      body(r, tcp, shm);
    });
  }
  for (auto& t : threads) t.join();
}

std::vector<float> random_floats(int rank, uint64_t n) {
  std::mt19937 gen(uint32_t(77 + rank));
  std::uniform_real_distribution<float> d(-3.f, 3.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

std::vector<float> integer_floats(int rank, uint64_t n) {
  std::vector<float> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = float(int64_t((i * 7 + uint64_t(rank) * 13) % 97) - 48);
  return v;
}

}  // namespace

// Two members: a + b does not depend on who adds, so shared memory and Gloo give the same bits, in one
// round and in many (sizes around the channel's buffer), for every collective the wire policy uses.
TEST(ShmChannel, TwoMembersGiveGloosBitsForEveryCollective) {
  const std::vector<uint64_t> sizes = {1, 5, kChannelFloats - 1, kChannelFloats + 3, 3 * kChannelFloats + 17};
  run_members(2, 30000ms, [&](int r, Group& tcp, Group& shm) {
    for (uint64_t n : sizes) {
      auto a = random_floats(r, n), b = a;
      tcp.allreduce_sum(a.data(), n, PERSEUS_ENGINE_FLOAT32);
      shm.allreduce_sum(b.data(), n, PERSEUS_ENGINE_FLOAT32);
      ASSERT_EQ(std::memcmp(a.data(), b.data(), n * 4), 0) << "allreduce of " << n;

      const std::vector<uint64_t> counts = {n / 2 + n % 2, n / 2};
      std::vector<char> scratch;
      a = random_floats(r, n), b = a;
      tcp.reduce_scatter_sum(a.data(), counts, PERSEUS_ENGINE_FLOAT32, scratch);
      shm.reduce_scatter_sum(b.data(), counts, PERSEUS_ENGINE_FLOAT32, scratch);
      const uint64_t mine = r == 0 ? 0 : counts[0];
      ASSERT_EQ(std::memcmp(a.data() + mine, b.data() + mine, counts[size_t(r)] * 4), 0) << "reduce-scatter of " << n;

      tcp.allgather_in_place(a.data(), counts, PERSEUS_ENGINE_FLOAT32);
      shm.allgather_in_place(b.data(), counts, PERSEUS_ENGINE_FLOAT32);
      ASSERT_EQ(std::memcmp(a.data(), b.data(), n * 4), 0) << "allgather of " << n;

      a = random_floats(r, n), b = a;
      tcp.reduce_sum(a.data(), n, PERSEUS_ENGINE_FLOAT32, 1);
      shm.reduce_sum(b.data(), n, PERSEUS_ENGINE_FLOAT32, 1);
      if (r == 1) ASSERT_EQ(std::memcmp(a.data(), b.data(), n * 4), 0) << "reduce of " << n;

      a = random_floats(r, n), b = a;
      tcp.broadcast(a.data(), n * 4, 0, PERSEUS_ENGINE_FLOAT32);
      shm.broadcast(b.data(), n * 4, 0, PERSEUS_ENGINE_FLOAT32);
      ASSERT_EQ(std::memcmp(a.data(), b.data(), n * 4), 0) << "broadcast of " << n;
      EXPECT_EQ(std::memcmp(b.data(), random_floats(0, n).data(), n * 4), 0);

      std::vector<uint16_t> h(n), g(n);  // fp16: small integers, so every sum is exact
      for (uint64_t i = 0; i < n; ++i) h[i] = uint16_t(0x3c00 + (i % 5) * 0x400 * (r + 1) / 4);
      g = h;
      tcp.allreduce_sum(h.data(), n, PERSEUS_ENGINE_FLOAT16);
      shm.allreduce_sum(g.data(), n, PERSEUS_ENGINE_FLOAT16);
      ASSERT_EQ(std::memcmp(h.data(), g.data(), n * 2), 0) << "fp16 allreduce of " << n;
    }
    // the wire counts payload whatever carries it
    EXPECT_EQ(shm.wire_bytes(PERSEUS_ENGINE_FLOAT32), tcp.wire_bytes(PERSEUS_ENGINE_FLOAT32));
    EXPECT_EQ(shm.wire_calls(PERSEUS_ENGINE_FLOAT16), tcp.wire_calls(PERSEUS_ENGINE_FLOAT16));
  });
}

// Three members, parts of unequal and zero length: every member's part is the exact sum.
TEST(ShmChannel, ThreeMembersSumExactlyWithEmptyAndUnequalParts) {
  const uint64_t n = 2 * kChannelFloats + 5;
  run_members(3, 30000ms, [&](int r, Group&, Group& shm) {
    std::vector<float> want(n, 0.f);
    for (int m = 0; m < 3; ++m) {
      auto v = integer_floats(m, n);
      for (uint64_t i = 0; i < n; ++i) want[i] += v[i];
    }
    for (const std::vector<uint64_t>& counts :
         {std::vector<uint64_t>{n, 0, 0}, {0, n - 3, 3}, {n / 3, n / 3, n - 2 * (n / 3)}}) {
      auto v = integer_floats(r, n);
      std::vector<char> scratch;
      shm.reduce_scatter_sum(v.data(), counts, PERSEUS_ENGINE_FLOAT32, scratch);
      shm.allgather_in_place(v.data(), counts, PERSEUS_ENGINE_FLOAT32);
      ASSERT_EQ(v, want) << "parts " << counts[0] << "/" << counts[1] << "/" << counts[2];
    }
    auto v = integer_floats(r, n);
    shm.allreduce_sum(v.data(), n, PERSEUS_ENGINE_FLOAT32);
    EXPECT_EQ(v, want);
    v = integer_floats(r, n);
    shm.reduce_sum(v.data(), n, PERSEUS_ENGINE_FLOAT32, 2);
    if (r == 2) EXPECT_EQ(v, want);
  });
}

// Buffers larger than the channel's go in rounds: an allgather of three buffers' worth per member, a
// broadcast of one byte more than a buffer.
TEST(ShmChannel, LargeBuffersGoInRounds) {
  run_members(2, 30000ms, [&](int r, Group&, Group& shm) {
    std::vector<float> v(6 * kChannelFloats, float(r));
    shm.allgather_in_place(v.data(), {3 * kChannelFloats, 3 * kChannelFloats}, PERSEUS_ENGINE_FLOAT32);
    EXPECT_EQ(v.front(), 0.f);
    EXPECT_EQ(v.back(), 1.f);
    std::vector<char> bytes(ShmChannel::kBufferBytes + 1, char(r + 1));
    shm.broadcast(bytes.data(), bytes.size(), 1);
    EXPECT_EQ(bytes.front(), 2);
    EXPECT_EQ(bytes.back(), 2);
  });
}

// A member whose group is destroyed (its engine shut down) fails the member waiting on it at once,
// long before the timeout.
TEST(ShmChannel, AMemberThatLeavesFailsTheOthersAtOnce) {
  const auto timeout = 60000ms;
  run_members(2, timeout, [&](int r, Group& tcp, Group& shm) {
    if (r == 1) {
      tcp.barrier();
      return;  // shm (and its channel) is destroyed by run_members once this returns
    }
    std::vector<float> v(1000, 1.f);
    tcp.barrier();
    const auto start = std::chrono::steady_clock::now();
    try {
      shm.allreduce_sum(v.data(), v.size(), PERSEUS_ENGINE_FLOAT32);
      ADD_FAILURE() << "the allreduce completed without its peer";
    } catch (const EngineError& e) {
      EXPECT_EQ(e.status(), PERSEUS_ENGINE_COMMUNICATION);
      EXPECT_NE(std::string(e.what()).find("left the group"), std::string::npos) << e.what();
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, timeout / 2);
  });
}

// A member that never comes fails the others after GLOO_TIMEOUT_SECONDS, naming it.
TEST(ShmChannel, AMemberThatNeverComesTimesOut) {
  run_members(2, 1000ms, [&](int r, Group& tcp, Group& shm) {
    if (r == 1) {
      std::this_thread::sleep_for(2500ms);  // alive, in the group, but not in the collective
      return;
    }
    std::vector<float> v(10, 1.f);
    try {
      shm.allreduce_sum(v.data(), v.size(), PERSEUS_ENGINE_FLOAT32);
      ADD_FAILURE() << "the allreduce completed without its peer";
    } catch (const EngineError& e) {
      EXPECT_NE(std::string(e.what()).find("GLOO_TIMEOUT_SECONDS=1"), std::string::npos) << e.what();
    }
    (void)tcp;
  });
}
