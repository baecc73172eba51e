// Negotiation: the wire format, the replicated table's order, and mismatch messages.
#include <gtest/gtest.h>

#include "negotiation.h"

using namespace perseus::engine;

namespace {
Request req(const std::string& name, Kind kind, std::vector<int64_t> shape, int dtype = 0, int op = 0, int root = 0) {
  Request r;
  r.name = name;
  r.kind = kind;
  r.shape = std::move(shape);
  r.dtype = dtype;
  r.op = op;
  r.root = root;
  return r;
}
}  // namespace

TEST(Negotiation, EncodeDecodeRoundTrip) {
  Announcement a;
  a.shutdown = true;
  a.aborts = {"stuck", "x/y"};
  a.requests = {req("grad/a", Kind::kAllreduce, {3, 4}, 0, 1), req("b", Kind::kBroadcast, {}, 3, 0, 2),
                req("g", Kind::kAllgather, {0, 7}, 6), req("bar", Kind::kBarrier, {})};
  Announcement b = decode(encode(a));
  EXPECT_TRUE(b.shutdown);
  ASSERT_EQ(b.requests.size(), 4u);
  EXPECT_EQ(describe(b.requests[0]), "allreduce float32[3,4] average");
  EXPECT_EQ(describe(b.requests[1]), "broadcast float64[] from root 2");
  EXPECT_EQ(describe(b.requests[2]), "allgather uint8[0,7]");
  EXPECT_EQ(b.requests[3].kind, Kind::kBarrier);
  EXPECT_EQ(b.requests[0].name, "grad/a");
  EXPECT_EQ(b.aborts, (std::vector<std::string>{"stuck", "x/y"}));
}

TEST(Negotiation, AbortNamesWhoSubmittedAndWhoDidNot) {
  Table t(3);
  t.add(0, req("s", Kind::kAllreduce, {2}));
  t.add(2, req("s", Kind::kAllreduce, {2}));
  EXPECT_EQ(t.pending_names(), std::vector<std::string>{"s"});
  std::string m = t.abort("s", 7);
  EXPECT_NE(m.find("collective 's' (allreduce float32[2] sum) was submitted by ranks 0,2 but not by ranks 1 within "
                   "GLOO_TIMEOUT_SECONDS=7"), std::string::npos) << m;
  EXPECT_EQ(t.pending(), 0u);
  EXPECT_EQ(t.abort("s", 7), "");  // gone (or completed): nothing to abort
}

TEST(Negotiation, CorruptMessagesThrow) {
  auto bytes = encode(Announcement{false, {req("x", Kind::kAllreduce, {5})}});
  auto truncated = bytes;
  truncated.pop_back();
  EXPECT_THROW(decode(truncated), std::runtime_error);
  auto trailing = bytes;
  trailing.push_back(0);
  EXPECT_THROW(decode(trailing), std::runtime_error);
  auto other = bytes;
  other[0] ^= 1;
  EXPECT_THROW(decode(other), std::runtime_error);
}

TEST(Negotiation, ReadyOnlyWhenEveryRankAnnouncedInFirstAnnouncementOrder) {
  Table t(2);
  t.add(0, req("a", Kind::kAllreduce, {4}));
  t.add(0, req("b", Kind::kAllreduce, {4}));
  t.add(1, req("b", Kind::kAllreduce, {4}));
  auto ready = t.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].name, "b");
  EXPECT_EQ(t.pending(), 1u);
  ASSERT_EQ(t.pending_report().size(), 1u);
  EXPECT_EQ(t.pending_report()[0], "'a' (submitted by ranks 0 of 2)");
  // rank 1 submits c then a: the order is the first announcement's (a before c)
  t.add(0, req("c", Kind::kAllreduce, {4}));
  t.add(1, req("c", Kind::kAllreduce, {4}));
  t.add(1, req("a", Kind::kAllreduce, {4}));
  ready = t.take_ready();
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_EQ(ready[0].name, "a");
  EXPECT_EQ(ready[1].name, "c");
  EXPECT_TRUE(ready[0].mismatch.empty());
  EXPECT_EQ(t.pending(), 0u);
}

TEST(Negotiation, SameNameTwiceFromOneRankIsAProtocolError) {
  Table t(2);
  t.add(0, req("a", Kind::kAllreduce, {4}));
  EXPECT_THROW(t.add(0, req("a", Kind::kAllreduce, {4})), std::runtime_error);
}

TEST(Negotiation, MismatchMessageNamesEveryVariantAndIsTheSameEverywhere) {
  std::vector<Request> per_rank = {req("w", Kind::kAllreduce, {4}), req("w", Kind::kAllreduce, {5}),
                                   req("w", Kind::kAllreduce, {4}), req("w", Kind::kAllreduce, {4}, 1)};
  std::string m = check_match(per_rank);
  EXPECT_NE(m.find("collective 'w' does not match across ranks"), std::string::npos) << m;
  EXPECT_NE(m.find("ranks 0,2 submitted allreduce float32[4] sum"), std::string::npos) << m;
  EXPECT_NE(m.find("rank 1 submitted allreduce float32[5] sum"), std::string::npos) << m;
  EXPECT_NE(m.find("rank 3 submitted allreduce float16[4] sum"), std::string::npos) << m;
  EXPECT_EQ(m, check_match(per_rank));
}

TEST(Negotiation, AllgatherFirstDimensionMayDifferButNotTheRest) {
  EXPECT_EQ(check_match({req("g", Kind::kAllgather, {1, 3}), req("g", Kind::kAllgather, {5, 3})}), "");
  EXPECT_NE(check_match({req("g", Kind::kAllgather, {1, 3}), req("g", Kind::kAllgather, {1, 4})}), "");
  EXPECT_NE(check_match({req("g", Kind::kAllreduce, {1}), req("g", Kind::kBroadcast, {1})}), "");
  EXPECT_NE(check_match({req("b", Kind::kBroadcast, {2}, 0, 0, 0), req("b", Kind::kBroadcast, {2}, 0, 0, 1)}), "");
  EXPECT_NE(check_match({req("s", Kind::kAllreduce, {2}, 0, 0), req("s", Kind::kAllreduce, {2}, 0, 1)}), "");
}
