// The rendezvous store: a TCP key-value store (set/get/wait/add with timeouts) implementing Gloo's
// rendezvous::Store interface. A store is not a transport: it only carries the few bytes each Gloo
// pair needs to find its peer; tensors travel over Gloo's TCP transport.
//
// TcpStoreServer: rank 0 (or a launcher) serves it at MASTER_ADDR:PERSEUS_MASTER_PORT.
// TcpStore: every rank's client (one connection, calls serialised by a mutex).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gloo/rendezvous/store.h"

namespace perseus::engine {

class TcpStoreServer {
 public:
  // Listens on host:port (port 0: a free one, see port()). Starts serving at once.
  TcpStoreServer(const std::string& host, int port);
  ~TcpStoreServer();  // stops: closes every connection and joins the threads
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const { return port_; }

 private:
  void accept_loop();
  void serve(int fd);

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, std::vector<char>> data_;
  std::vector<int> clients_;
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

class TcpStore : public gloo::rendezvous::Store {
 public:
  // Connects (retrying while the server is not up yet) within `timeout`; get/wait use it too.
  TcpStore(const std::string& host, int port, std::chrono::milliseconds timeout);
  ~TcpStore() override;

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;
  int64_t add(const std::string& key, int64_t value) override;

  // get with an explicit timeout (get() uses the store's).
  std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout);

 private:
  std::string where() const;

  std::string host_;
  int port_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  int fd_ = -1;
};

}  // namespace perseus::engine
