// The collectives of one Group whose members share a host, through one shared-memory segment instead of
// loopback TCP (what NCCL's and Open MPI's shared-memory transports do for ranks of one node).
//
// Every member owns two buffers of kBufferBytes in the segment and a published round counter. One round:
// write into my buffer (round % 2), publish the round, wait until every member published it, read the
// others' buffers. Double buffering makes that one wait enough: a member overwrites a buffer (round r+2)
// only after every member published round r+1, which each does only after it finished reading round r.
// A wait spins briefly, then sleeps on the counter's futex; it fails (EngineError COMMUNICATION) when the
// member it waits for left (its channel was destroyed), its process is gone, or GLOO_TIMEOUT_SECONDS passed.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace perseus::engine {

class Group;

class ShmChannel {
 public:
  static constexpr uint64_t kBufferBytes = 1ull << 20;

  // Collective over `group` (every member calls it, in the same order as its other collectives): member 0
  // creates the segment with its memory reserved, the others map it by the name member 0 sends them; the
  // name is removed once all mapped it. Null on every member when any member could not (another host,
  // /dev/shm absent or too small); `why` then says which member and why.
  static std::unique_ptr<ShmChannel> attach(Group& group, std::chrono::milliseconds timeout, std::string* why);
  ~ShmChannel();  // tells members waiting on this one that it left

  ShmChannel(const ShmChannel&) = delete;
  ShmChannel& operator=(const ShmChannel&) = delete;

  // The semantics of Group's methods of the same names (group.h), with the members' sums added in
  // member order.
  void reduce_scatter_sum(void* data, const std::vector<uint64_t>& counts, int dtype);
  void allgather_in_place(void* data, const std::vector<uint64_t>& counts, int dtype);
  void allreduce_sum(void* data, uint64_t n, int dtype);
  void reduce_sum(void* data, uint64_t n, int dtype, int root);
  void broadcast(void* data, uint64_t nbytes, int root);

 private:
  struct Segment;
  ShmChannel(std::string group_name, int rank, int size, std::chrono::milliseconds timeout, void* base,
             uint64_t bytes);

  char* buffer(int member, uint64_t round) const;
  // Publishes round_ + 1 and waits until every member published it; afterwards round_ is that round.
  void finish_round();
  void wait_for(int member, uint32_t round);
  void check_alive(int member) const;

  std::string group_name_;
  int rank_, size_;
  std::chrono::milliseconds timeout_;
  Segment* segment_;
  uint64_t mapped_bytes_;
  uint64_t round_ = 0;
  int owner_pid_;               // a forked child that inherits the mapping never tells the members it left
  std::vector<bool> checkable_;  // whether member m's process can be seen from here (same PID namespace)
};

}  // namespace perseus::engine
