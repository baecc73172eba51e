// Blocking TCP helpers of the rendezvous store: connect with retries, exact reads and writes,
// length-prefixed frames. Errors throw std::runtime_error naming the peer and the failing call.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace perseus::engine {

// Listens on host:port (host "" or "0.0.0.0": every address); port 0 picks a free one.
int listen_tcp(const std::string& host, int port, int* bound_port);
// Connects to host:port, retrying refused/unreachable attempts until the deadline.
int connect_tcp(const std::string& host, int port, std::chrono::steady_clock::time_point deadline);

// false: the peer closed the connection before the first byte (read_exact only).
bool read_exact(int fd, void* data, size_t n);
void write_all(int fd, const void* data, size_t n);

// A byte buffer with little helpers for the store's frames.
class Frame {
 public:
  void u8(uint8_t v) { bytes_.push_back(v); }
  void u64(uint64_t v);
  void str(const std::string& s);
  void blob(const std::vector<char>& b);
  const std::vector<char>& bytes() const { return bytes_; }

 private:
  std::vector<char> bytes_;
};

// Reads one value of each kind from a connection (throws when it closes midway).
uint8_t recv_u8(int fd);
uint64_t recv_u64(int fd);
std::string recv_str(int fd);
std::vector<char> recv_blob(int fd);
// The whole frame in one write, prefixed by nothing: frames are self-delimiting.
void send_frame(int fd, const Frame& frame);

}  // namespace perseus::engine
