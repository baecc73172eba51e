// The stream tuner: its rule and schedule (pure), and 2 ranks on threads that agree on one count.
#include <gtest/gtest.h>

#include <cstring>
#include <cmath>
#include <limits>
#include <thread>

#include "engine.h"
#include "options.h"
#include "stream_tuner.h"
#include "tcp_store.h"

using namespace perseus::engine;

TEST(StreamTuner, FewestStreamsUnlessMoreAreFasterByTheMargin) {
  EXPECT_EQ(StreamTuner::choose({1, 4}, {1.0, 0.98}), 1);  // 2% faster: not enough
  EXPECT_EQ(StreamTuner::choose({1, 4}, {1.0, 0.90}), 4);
  EXPECT_EQ(StreamTuner::choose({1, 4}, {1.0, std::numeric_limits<double>::infinity()}), 1);  // unknown
  EXPECT_EQ(StreamTuner::choose({1, 4}, {std::numeric_limits<double>::infinity(), 0.5}), 1);
}

TEST(StreamTuner, ScheduleCountsLargeDispatchesOnly) {
  StreamTuner fixed(4, false);
  EXPECT_FALSE(fixed.tuning());
  EXPECT_EQ(fixed.on_dispatch(64u << 20).streams, 4);

  StreamTuner t(4, true);
  ASSERT_EQ(t.candidates(), (std::vector<int>{1, 4}));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(t.on_dispatch(1000).streams, 1);  // small: the schedule waits
  for (int i = 0; i < StreamTuner::kWarmup; ++i) EXPECT_EQ(t.on_dispatch(2u << 20).tag, -1);
  for (int i = 0; i < StreamTuner::kMeasured; ++i) {
    auto slot = t.on_dispatch(2u << 20);
    EXPECT_EQ(slot.tag, 0);
    EXPECT_EQ(slot.streams, 1);
  }
  EXPECT_EQ(t.active(), 4);
  for (int i = 0; i < StreamTuner::kWarmup + StreamTuner::kMeasured; ++i) EXPECT_EQ(t.on_dispatch(2u << 20).streams, 4);
  EXPECT_EQ(t.active(), 1);  // one stream again: drift weighs on both alike
  EXPECT_FALSE(t.decision_due());
  for (int i = 0; i < StreamTuner::kWarmup; ++i) EXPECT_EQ(t.on_dispatch(2u << 20).tag, -1);
  for (int i = 0; i < StreamTuner::kMeasured; ++i) EXPECT_EQ(t.on_dispatch(2u << 20).tag, 0);
  EXPECT_TRUE(t.decision_due());
  t.decide({1.0, 0.5});
  EXPECT_EQ(t.active(), 4);
  EXPECT_FALSE(t.decision_due());
}

TEST(StreamTuner, BusyPeriodsOfOneCandidateCount) {
  StreamTuner t(2, true);
  t.group_started(0, 1u << 30);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  t.group_done(0);
  t.group_started(0, 1u << 20);  // a period with groups of both candidates: not counted
  t.group_started(1, 1u << 20);
  t.group_done(0);
  EXPECT_FALSE(t.measured_groups_done());
  t.group_done(1);
  EXPECT_TRUE(t.measured_groups_done());
  auto s = t.local_seconds_per_gib();
  EXPECT_GE(s[0], 0.02);
  EXPECT_LT(s[0], 5.0);
  EXPECT_TRUE(std::isinf(s[1]));
}

TEST(EngineStreamTuner, TwoRanksAgreeOnOneCountAndResultsStayRight) {
  int port = 0;
  {
    TcpStoreServer probe("127.0.0.1", 0);
    port = probe.port();
  }
  perseus_engine_info infos[2];
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      perseus_engine_options o;
      default_options(&o);
      o.rank = r;
      o.size = 2;
      o.master_port = port;
      o.wire_dtype = 1;
      o.streams = 3;
      o.stream_tuning = 1;
      o.timeout_seconds = 30;
      std::strcpy(o.master_addr, "127.0.0.1");
      Engine e(o);
      const int dispatches = 3 * (StreamTuner::kWarmup + StreamTuner::kMeasured) + 3;
      for (int i = 0; i < dispatches; ++i) {
        std::vector<float> a(300000, float(r + i)), b(300000, 1.0f);  // 2.4 MB a dispatch: two groups
        Request ra{"a", Kind::kAllreduce, PERSEUS_ENGINE_FLOAT32, {300000}, PERSEUS_ENGINE_SUM, 0};
        Request rb{"b", Kind::kAllreduce, PERSEUS_ENGINE_FLOAT32, {300000}, PERSEUS_ENGINE_SUM, 0};
        int64_t ha = e.submit(ra, a.data(), nullptr), hb = e.submit(rb, b.data(), nullptr);
        for (int64_t h : {ha, hb}) {
          auto op = e.find(h);
          std::unique_lock<std::mutex> lock(op->mu);
          op->cv.wait(lock, [&] { return op->done; });
          ASSERT_EQ(op->status, PERSEUS_ENGINE_OK) << op->error;
        }
        e.release(ha);
        e.release(hb);
        ASSERT_EQ(a[299999], float(1 + 2 * i));
        ASSERT_EQ(b[0], 2.0f);
      }
      infos[r] = e.info();
      e.shutdown();
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& info : infos) {
    EXPECT_EQ(info.stream_tuning, 2);
    EXPECT_EQ(info.streams, 3);
    EXPECT_GT(info.tuned_seconds_per_gib_one, 0);
    EXPECT_GT(info.tuned_seconds_per_gib_all, 0);
  }
  EXPECT_EQ(infos[0].streams_in_use, infos[1].streams_in_use);
  EXPECT_EQ(infos[0].tuned_seconds_per_gib_one, infos[1].tuned_seconds_per_gib_one);  // the slowest rank's, on both
}
