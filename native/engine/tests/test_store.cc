// The rendezvous store: set/get/wait/add over TCP, timeouts with a clear error, many clients.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "gloo/common/error.h"
#include "tcp_store.h"

using perseus::engine::TcpStore;
using perseus::engine::TcpStoreServer;
using namespace std::chrono_literals;

namespace {
std::vector<char> bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<char>& v) { return {v.begin(), v.end()}; }
}  // namespace

TEST(TcpStore, SetThenGet) {
  TcpStoreServer server("127.0.0.1", 0);
  ASSERT_GT(server.port(), 0);
  TcpStore a("127.0.0.1", server.port(), 5s), b("127.0.0.1", server.port(), 5s);
  a.set("k", bytes("value"));
  EXPECT_EQ(text(b.get("k")), "value");
  a.set("k", bytes("other"));  // overwrite
  EXPECT_EQ(text(b.get("k")), "other");
  a.set("empty", {});
  EXPECT_TRUE(b.get("empty").empty());
}

TEST(TcpStore, GetBlocksUntilAnotherClientSets) {
  TcpStoreServer server("127.0.0.1", 0);
  TcpStore reader("127.0.0.1", server.port(), 5s);
  std::thread writer([port = server.port()] {
    std::this_thread::sleep_for(200ms);
    TcpStore w("127.0.0.1", port, 5s);
    w.set("late", bytes("here"));
  });
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(text(reader.get("late")), "here");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 150ms);
  writer.join();
}

TEST(TcpStore, WaitTimesOutWithAMessageNamingTheKeys) {
  TcpStoreServer server("127.0.0.1", 0);
  TcpStore c("127.0.0.1", server.port(), 5s);
  c.set("present", bytes("1"));
  auto start = std::chrono::steady_clock::now();
  try {
    c.wait({"present", "missing"}, 300ms);
    FAIL() << "wait returned without the key";
  } catch (const gloo::IoException& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("GLOO_TIMEOUT_SECONDS"), std::string::npos) << e.what();
  }
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 3s);
  c.wait({"present"}, 300ms);  // the connection still works after a timeout
  EXPECT_THROW(c.get("missing", 100ms), gloo::IoException);
}

TEST(TcpStore, AddCountsAcrossClients) {
  TcpStoreServer server("127.0.0.1", 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([port = server.port()] {
      TcpStore c("127.0.0.1", port, 5s);
      for (int i = 0; i < 50; ++i) c.add("counter", 1);
    });
  }
  for (auto& t : threads) t.join();
  TcpStore c("127.0.0.1", server.port(), 5s);
  EXPECT_EQ(c.add("counter", 0), 400);
  EXPECT_EQ(c.add("counter", -10), 390);
}

TEST(TcpStore, ConnectRetriesUntilTheServerIsUp) {
  // pick a free port, close it, start the server on it a little later
  int port;
  { TcpStoreServer probe("127.0.0.1", 0); port = probe.port(); }
  std::unique_ptr<TcpStoreServer> server;
  std::thread starter([&] {
    std::this_thread::sleep_for(300ms);
    server = std::make_unique<TcpStoreServer>("127.0.0.1", port);
  });
  TcpStore c("127.0.0.1", port, 5s);
  c.set("x", bytes("y"));
  EXPECT_EQ(text(c.get("x")), "y");
  starter.join();
}

TEST(TcpStore, ConnectGivesUpWithAnActionableMessage) {
  int port;
  { TcpStoreServer probe("127.0.0.1", 0); port = probe.port(); }
  try {
    TcpStore c("127.0.0.1", port, 300ms);
    FAIL() << "connected to a closed port";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("PERSEUS_MASTER_PORT"), std::string::npos) << e.what();
  }
}

TEST(TcpStore, ServerStopsWhileAClientWaits) {
  auto server = std::make_unique<TcpStoreServer>("127.0.0.1", 0);
  TcpStore c("127.0.0.1", server->port(), 5s);
  std::thread stopper([&] {
    std::this_thread::sleep_for(200ms);
    server.reset();  // must not hang on the waiting connection
  });
  EXPECT_ANY_THROW(c.wait({"never"}, 10s));
  stopper.join();
}
