#include "tcp_store.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

#include "gloo/common/error.h"
#include "socket_io.h"

namespace perseus::engine {
namespace {

enum Command : uint8_t { kSet = 1, kGet = 2, kWait = 3, kAdd = 4 };
enum Reply : uint8_t { kOk = 0, kTimeout = 1 };

int64_t decode_i64(const std::vector<char>& v) {
  int64_t out = 0;
  if (v.size() == sizeof(out)) std::memcpy(&out, v.data(), sizeof(out));
  return out;
}

std::string key_list(const std::vector<std::string>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size() && i < 4; ++i) out += (i ? ", " : "") + keys[i];
  if (keys.size() > 4) out += ", ... (" + std::to_string(keys.size()) + " keys)";
  return out;
}

}  // namespace

// ---- server ------------------------------------------------------------------------------------

TcpStoreServer::TcpStoreServer(const std::string& host, int port) {
  listen_fd_ = listen_tcp(host, port, &port_);
  acceptor_ = std::thread([this] { accept_loop(); });
}

TcpStoreServer::~TcpStoreServer() {
  {
    std::lock_guard<std::mutex> lock(mu_);  // under the lock: a waiting client cannot miss the wake-up
    stopping_ = true;
  }
  ::shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  ::close(listen_fd_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : clients_) ::shutdown(fd, SHUT_RDWR);
  }
  changed_.notify_all();
  for (auto& t : threads_) t.join();
  for (int fd : clients_) ::close(fd);
}

void TcpStoreServer::accept_loop() {
  while (!stopping_) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (stopping_) return;
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // the listening socket is gone: nothing more to accept
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) { ::close(fd); return; }
    clients_.push_back(fd);
    threads_.emplace_back([this, fd] { serve(fd); });
  }
}

void TcpStoreServer::serve(int fd) {
  try {
    while (!stopping_) {
      uint8_t cmd = 0;
      if (!read_exact(fd, &cmd, 1)) return;  // the client hung up
      Frame reply;
      if (cmd == kSet) {
        std::string key = recv_str(fd);
        std::vector<char> value = recv_blob(fd);
        {
          std::lock_guard<std::mutex> lock(mu_);
          data_[key] = std::move(value);
        }
        changed_.notify_all();
        reply.u8(kOk);
      } else if (cmd == kGet || cmd == kWait) {
        std::vector<std::string> keys;
        if (cmd == kGet) {
          keys.push_back(recv_str(fd));
        } else {
          uint64_t n = recv_u64(fd);
          if (n > (1u << 20)) throw std::runtime_error("corrupt wait request");
          for (uint64_t i = 0; i < n; ++i) keys.push_back(recv_str(fd));
        }
        auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(recv_u64(fd));
        std::unique_lock<std::mutex> lock(mu_);
        bool present = changed_.wait_until(lock, deadline, [&] {
          return stopping_ || std::all_of(keys.begin(), keys.end(), [&](const std::string& k) { return data_.count(k); });
        });
        if (stopping_) return;
        reply.u8(present ? kOk : kTimeout);
        if (cmd == kGet && present) reply.blob(data_[keys[0]]);
      } else if (cmd == kAdd) {
        std::string key = recv_str(fd);
        int64_t delta = int64_t(recv_u64(fd));
        int64_t value;
        {
          std::lock_guard<std::mutex> lock(mu_);
          value = decode_i64(data_[key]) + delta;
          std::vector<char> encoded(sizeof(value));
          std::memcpy(encoded.data(), &value, sizeof(value));
          data_[key] = encoded;
        }
        changed_.notify_all();
        reply.u8(kOk);
        reply.u64(uint64_t(value));
      } else {
        return;  // not a store client: drop the connection
      }
      send_frame(fd, reply);
    }
  } catch (const std::exception&) {
    // a client that vanished mid-request: its connection ends, the store serves the others
  }
}

// ---- client ------------------------------------------------------------------------------------

TcpStore::TcpStore(const std::string& host, int port, std::chrono::milliseconds timeout)
    : host_(host), port_(port), timeout_(timeout) {
  fd_ = connect_tcp(host, port, std::chrono::steady_clock::now() + timeout);
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
}

std::string TcpStore::where() const { return host_ + ":" + std::to_string(port_); }

void TcpStore::set(const std::string& key, const std::vector<char>& data) {
  Frame f;
  f.u8(kSet);
  f.str(key);
  f.blob(data);
  std::lock_guard<std::mutex> lock(mu_);
  send_frame(fd_, f);
  recv_u8(fd_);
}

std::vector<char> TcpStore::get(const std::string& key) { return get(key, timeout_); }

std::vector<char> TcpStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  Frame f;
  f.u8(kGet);
  f.str(key);
  f.u64(uint64_t(timeout.count()));
  std::lock_guard<std::mutex> lock(mu_);
  send_frame(fd_, f);
  if (recv_u8(fd_) != kOk) {
    GLOO_THROW_IO_EXCEPTION("perseus store ", where(), ": key '", key, "' did not appear within ", timeout.count(),
                            " ms: a rank did not reach the rendezvous (crashed, or started with other numbers); "
                            "raise GLOO_TIMEOUT_SECONDS if ranks start slowly");
  }
  return recv_blob(fd_);
}

void TcpStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void TcpStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  Frame f;
  f.u8(kWait);
  f.u64(keys.size());
  for (const auto& k : keys) f.str(k);
  f.u64(uint64_t(timeout.count()));
  std::lock_guard<std::mutex> lock(mu_);
  send_frame(fd_, f);
  if (recv_u8(fd_) != kOk) {
    GLOO_THROW_IO_EXCEPTION("perseus store ", where(), ": keys [", key_list(keys), "] did not all appear within ",
                            timeout.count(), " ms: a rank did not reach the rendezvous (crashed, or started with "
                            "other numbers); raise GLOO_TIMEOUT_SECONDS if ranks start slowly");
  }
}

int64_t TcpStore::add(const std::string& key, int64_t value) {
  Frame f;
  f.u8(kAdd);
  f.str(key);
  f.u64(uint64_t(value));
  std::lock_guard<std::mutex> lock(mu_);
  send_frame(fd_, f);
  recv_u8(fd_);
  return int64_t(recv_u64(fd_));
}

}  // namespace perseus::engine
