// PERSEUS_OFFLINE_NEG: the plan learner (pure data) and 2 ranks on threads that switch to the plan,
// submit in different orders, and one that leaves the plan.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <thread>

#include "engine.h"
#include "offline.h"
#include "options.h"
#include "tcp_store.h"

using namespace perseus::engine;

namespace {

Request allreduce(const std::string& name, int64_t n) {
  Request r;
  r.name = name;
  r.kind = Kind::kAllreduce;
  r.dtype = PERSEUS_ENGINE_FLOAT32;
  r.shape = {n};
  r.op = PERSEUS_ENGINE_SUM;
  return r;
}

Agreed agreed(const Request& r, int size = 2) { return Agreed{r.name, std::vector<Request>(size_t(size), r), ""}; }

std::vector<Agreed> cycle(std::initializer_list<Request> rs) {
  std::vector<Agreed> out;
  for (const auto& r : rs) out.push_back(agreed(r));
  return out;
}

}  // namespace

TEST(PlanLearner, RepeatedStepsBecomeThePlanWithTheirBatches) {
  PlanLearner learner;
  std::vector<PlanBatch> plan;
  Request init = allreduce("init", 3), a = allreduce("a", 4), b = allreduce("b", 5), c = allreduce("c", 6);
  learner.add_cycle(cycle({init}));
  learner.add_cycle(cycle({a}));
  learner.add_cycle(cycle({b, c}));
  EXPECT_FALSE(learner.try_finish(&plan));  // one step: nothing repeats yet
  learner.add_cycle(cycle({a, b}));         // the second step, batched differently
  EXPECT_FALSE(learner.try_finish(&plan));
  learner.add_cycle(cycle({c}));
  ASSERT_TRUE(learner.try_finish(&plan));
  ASSERT_EQ(plan.size(), 2u);  // the batches of the last step: [a, b], [c]
  ASSERT_EQ(plan[0].size(), 2u);
  EXPECT_EQ(plan[0][0].name, "a");
  EXPECT_EQ(plan[0][1].name, "b");
  EXPECT_EQ(plan[1][0].name, "c");
}

TEST(PlanLearner, AChangedShapeOrAMismatchIsNoPlan) {
  PlanLearner learner;
  std::vector<PlanBatch> plan;
  learner.add_cycle(cycle({allreduce("a", 4), allreduce("b", 5)}));
  learner.add_cycle(cycle({allreduce("a", 4), allreduce("b", 7)}));
  EXPECT_FALSE(learner.try_finish(&plan));
  Agreed bad = agreed(allreduce("a", 4));
  bad.mismatch = "shapes differ";
  learner.add_cycle({bad});
  learner.add_cycle(cycle({allreduce("b", 5)}));
  EXPECT_FALSE(learner.try_finish(&plan));  // the mismatch started the learning over: b once
  learner.add_cycle(cycle({allreduce("b", 5)}));
  EXPECT_TRUE(learner.try_finish(&plan));
}

TEST(OfflinePlan, ChecksNameAndRequest) {
  OfflinePlan plan({{{"a", {allreduce("a", 4), allreduce("a", 4)}}}}, 1);
  EXPECT_EQ(plan.check(allreduce("a", 4)), "");
  EXPECT_NE(plan.check(allreduce("a", 5)).find("the plan holds allreduce float32[4] sum"), std::string::npos);
  EXPECT_NE(plan.check(allreduce("z", 4)).find("'z' (allreduce float32[4] sum) is not one of the 1 collectives"),
            std::string::npos);
}

namespace {

void run_offline_ranks(const std::function<void(Engine&, int)>& body, int timeout_seconds = 20) {
  int port = 0;
  {
    TcpStoreServer probe("127.0.0.1", 0);
    port = probe.port();
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([=] {
      perseus_engine_options o;
      default_options(&o);
      o.rank = r;
      o.size = 2;
      o.master_port = port;
      o.wire_dtype = 1;
      o.timeout_seconds = timeout_seconds;
      o.offline_neg = 1;
      std::strcpy(o.master_addr, "127.0.0.1");
      Engine engine(o);
      body(engine, r);
    });
  }
  for (auto& t : threads) t.join();
}

perseus_engine_status wait_status(Engine& e, int64_t h, std::string* error = nullptr) {
  auto op = e.find(h);
  std::unique_lock<std::mutex> lock(op->mu);
  op->cv.wait(lock, [&] { return op->done; });
  if (error) *error = op->error;
  return op->status;
}

// One step: a, b, c (rank 0) or c, b, a (rank 1); every rank waits at the end. Returns a's sum.
void step(Engine& e, int rank, int s) {
  std::vector<float> a(8, float(rank + s)), b(3, 1.0f), c(100, float(rank));
  std::vector<std::pair<std::string, std::vector<float>*>> order = {{"a", &a}, {"b", &b}, {"c", &c}};
  if (rank == 1) std::swap(order[0], order[2]);
  std::vector<int64_t> handles;
  for (auto& [name, buf] : order) {
    handles.push_back(e.submit(allreduce(name, int64_t(buf->size())), buf->data(), nullptr));
  }
  for (auto h : handles) ASSERT_EQ(wait_status(e, h), PERSEUS_ENGINE_OK);
  for (auto h : handles) e.release(h);
  EXPECT_EQ(a[0], float(1 + 2 * s));
  EXPECT_EQ(b[2], 2.0f);
  EXPECT_EQ(c[99], 1.0f);
}

}  // namespace

TEST(EngineOffline, DifferentOrdersRunFromThePlanWithoutNegotiating) {
  run_offline_ranks([](Engine& e, int rank) {
    for (int s = 0; s < 3; ++s) step(e, rank, s);
    auto switched = e.info();
    EXPECT_EQ(switched.offline, 1);
    EXPECT_EQ(switched.plan_collectives, 3);
    for (int s = 3; s < 8; ++s) step(e, rank, s);
    auto after = e.info();
    EXPECT_EQ(after.negotiation_cycles, switched.negotiation_cycles);  // no control allgather since the switch
    EXPECT_GE(after.offline_batches, switched.offline_batches + 5);
    e.shutdown();
  });
}

TEST(EngineOffline, ARankThatLeavesThePlanFailsEveryRankWithOneMessage) {
  std::string errors[2];
  perseus_engine_status statuses[2] = {PERSEUS_ENGINE_OK, PERSEUS_ENGINE_OK};
  run_offline_ranks([&](Engine& e, int rank) {
    for (int s = 0; s < 3; ++s) step(e, rank, s);
    ASSERT_EQ(e.info().offline, 1);
    std::vector<float> a(8, 1.0f), b(3, 1.0f), c(100, 1.0f), z(2, 1.0f);
    int64_t h = 0;
    if (rank == 1) {
      h = e.submit(allreduce("z", 2), z.data(), nullptr);
    } else {  // a whole step of the plan: its first batch waits for rank 1
      h = e.submit(allreduce("a", 8), a.data(), nullptr);
      e.submit(allreduce("b", 3), b.data(), nullptr);
      e.submit(allreduce("c", 100), c.data(), nullptr);
    }
    statuses[rank] = wait_status(e, h, &errors[rank]);
  }, /*timeout_seconds=*/3);  // rank 1 waits for the others to leave the plan too, rank 0 for rank 1's 'a'
  EXPECT_EQ(statuses[1], PERSEUS_ENGINE_MISMATCH);
  EXPECT_EQ(statuses[0], PERSEUS_ENGINE_MISMATCH);
  EXPECT_NE(errors[1].find("PERSEUS_OFFLINE_NEG=1: rank 1 left the plan of 3 collectives"), std::string::npos) << errors[1];
  EXPECT_NE(errors[1].find("'z' (allreduce float32[2] sum) is not one of the 3 collectives"), std::string::npos);
  EXPECT_NE(errors[1].find("the other ranks did not leave the plan too within GLOO_TIMEOUT_SECONDS=3"), std::string::npos);
  EXPECT_EQ(errors[0], errors[1]);
}

TEST(EngineOffline, RanksThatLeaveThePlanTogetherNegotiateAgainAndLearnANewPlan) {
  run_offline_ranks([](Engine& e, int rank) {
    for (int s = 0; s < 3; ++s) step(e, rank, s);
    ASSERT_EQ(e.info().offline, 1);
    // a new phase: other collectives, rank 0 submits one of the old plan after the first new one
    for (int s = 0; s < 4; ++s) {
      std::vector<float> x(6, float(rank + s)), a(8, 1.0f);
      int64_t hx = e.submit(allreduce("x", 6), x.data(), nullptr);
      int64_t ha = e.submit(allreduce("a", 8), a.data(), nullptr);
      ASSERT_EQ(wait_status(e, hx), PERSEUS_ENGINE_OK);
      ASSERT_EQ(wait_status(e, ha), PERSEUS_ENGINE_OK);
      e.release(hx);
      e.release(ha);
      EXPECT_EQ(x[5], float(1 + 2 * s));
      EXPECT_EQ(a[7], 2.0f);
    }
    auto info = e.info();
    EXPECT_EQ(info.renegotiations, 1u);
    EXPECT_EQ(info.offline, 1);
    EXPECT_EQ(info.plan_collectives, 2);
    e.shutdown();
  });
}

TEST(PlanLearner, LongBatchesAreCutSoThatTransfersStartEarly) {
  PlanLearner learner;
  std::vector<PlanBatch> plan;
  std::vector<Agreed> step;
  for (int i = 0; i < 40; ++i) step.push_back(agreed(allreduce("g" + std::to_string(100 + i), 4)));
  learner.add_cycle(step);
  learner.add_cycle(step);
  ASSERT_TRUE(learner.try_finish(&plan));
  ASSERT_EQ(plan.size(), 3u);  // 16 + 16 + 8, in agreed order
  EXPECT_EQ(plan[0].size(), PlanLearner::kMaxBatch);
  EXPECT_EQ(plan[2].size(), 8u);
  EXPECT_EQ(plan[1][0].name, "g116");
}

TEST(PlanLearner, StepsInAnotherOrderStillRepeat) {
  PlanLearner learner;
  std::vector<PlanBatch> plan;
  Request a = allreduce("a", 4), b = allreduce("b", 5), c = allreduce("c", 6);
  learner.add_cycle(cycle({a, b, c}));
  learner.add_cycle(cycle({c, a}));
  learner.add_cycle(cycle({b}));
  ASSERT_TRUE(learner.try_finish(&plan));
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0][0].name, "c");
  EXPECT_EQ(plan[1][0].name, "b");
}
