#include "socket_io.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace perseus::engine {
namespace {

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

constexpr uint64_t kMaxBlob = uint64_t(1) << 32;  // a store value is small metadata; 4 GiB is corrupt

}  // namespace

int listen_tcp(const std::string& host, int port, int* bound_port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const bool any = host.empty() || host == "0.0.0.0";
  std::string service = std::to_string(port);
  int rc = getaddrinfo(any ? nullptr : host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) {
    throw std::runtime_error("cannot resolve the store address '" + host + "': " + gai_strerror(rc));
  }
  std::string last = "no address";
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) { last = errno_text("socket"); continue; }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) {
      sockaddr_storage addr{};
      socklen_t len = sizeof(addr);
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
      if (bound_port != nullptr) {
        *bound_port = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                                 : ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
      }
      freeaddrinfo(res);
      return fd;
    }
    last = errno_text("bind/listen");
    ::close(fd);
  }
  freeaddrinfo(res);
  throw std::runtime_error("cannot listen on " + (any ? std::string("*") : host) + ":" + service + " (" + last +
                           "): the port is taken or the address is not this machine's; choose another "
                           "PERSEUS_MASTER_PORT");
}

int connect_tcp(const std::string& host, int port, std::chrono::steady_clock::time_point deadline) {
  std::string service = std::to_string(port);
  std::string last = "no attempt";
  auto pause = std::chrono::milliseconds(10);
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
    if (rc != 0) {
      last = std::string("cannot resolve '") + host + "': " + gai_strerror(rc);
    } else {
      for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
        int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) { last = errno_text("socket"); continue; }
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          freeaddrinfo(res);
          return fd;
        }
        last = errno_text("connect");
        ::close(fd);
      }
      freeaddrinfo(res);
    }
    if (std::chrono::steady_clock::now() + pause > deadline) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
  }
  throw std::runtime_error("cannot reach the rendezvous store at " + host + ":" + service + " (" + last +
                           ") within GLOO_TIMEOUT_SECONDS: is rank 0 (or the launcher serving the store) "
                           "running, and are MASTER_ADDR and PERSEUS_MASTER_PORT the same on every rank?");
}

bool read_exact(int fd, void* data, size_t n) {
  auto* p = static_cast<char*>(data);
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::recv(fd, p + done, n - done, 0);
    if (r == 0) {
      if (done == 0) return false;
      throw std::runtime_error("the store connection closed in the middle of a message");
    }
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(errno_text("store connection: recv"));
    }
    done += size_t(r);
  }
  return true;
}

void write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::send(fd, p + done, n - done, MSG_NOSIGNAL);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(errno_text("store connection: send"));
    }
    done += size_t(r);
  }
}

void Frame::u64(uint64_t v) {
  for (int i = 0; i < 8; ++i) bytes_.push_back(char((v >> (8 * i)) & 0xff));
}

void Frame::str(const std::string& s) {
  u64(s.size());
  bytes_.insert(bytes_.end(), s.begin(), s.end());
}

void Frame::blob(const std::vector<char>& b) {
  u64(b.size());
  bytes_.insert(bytes_.end(), b.begin(), b.end());
}

uint8_t recv_u8(int fd) {
  uint8_t v = 0;
  if (!read_exact(fd, &v, 1)) throw std::runtime_error("the store connection closed");
  return v;
}

uint64_t recv_u64(int fd) {
  unsigned char b[8];
  if (!read_exact(fd, b, 8)) throw std::runtime_error("the store connection closed");
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[i];
  return v;
}

std::vector<char> recv_blob(int fd) {
  uint64_t n = recv_u64(fd);
  if (n > kMaxBlob) throw std::runtime_error("corrupt store message (a value of " + std::to_string(n) + " bytes)");
  std::vector<char> out(n);
  if (n > 0 && !read_exact(fd, out.data(), n)) throw std::runtime_error("the store connection closed");
  return out;
}

std::string recv_str(int fd) {
  auto b = recv_blob(fd);
  return std::string(b.begin(), b.end());
}

void send_frame(int fd, const Frame& frame) { write_all(fd, frame.bytes().data(), frame.bytes().size()); }

}  // namespace perseus::engine
