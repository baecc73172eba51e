// One Gloo context over a set of ranks (all ranks, a node, or the node leaders) and the collectives
// the engine runs on it (over shared memory instead where the members share a host: share_memory()). Every call blocks until done or throws (gloo::IoException on a lost peer or a
// timeout). Calls on one Group must come from one thread at a time, in the same order on its ranks.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gloo {
class Context;
namespace rendezvous { class Store; }
namespace transport { class Device; }
}  // namespace gloo

namespace perseus::engine {

class ShmChannel;

class Group {
 public:
  // Connects the members' full mesh through the store under `prefix`; rank/size are within the group.
  Group(const std::string& prefix, int rank, int size, gloo::rendezvous::Store& store,
        std::shared_ptr<gloo::transport::Device>& device, std::chrono::milliseconds timeout);
  ~Group();

  // Collective over the members: from here on the reductions, reduce-scatters, allgathers and broadcasts
  // go through shared memory (shm_channel.h) when every member can map one segment (they share a host);
  // false, and Gloo's TCP stays in use, when any cannot (`why` says which and why).
  bool share_memory(std::string* why = nullptr);
  bool shares_memory() const { return shm_ != nullptr; }

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& name() const { return prefix_; }

  // In place sum of n elements of dtype (perseus_engine_dtype) over the group.
  void allreduce_sum(void* data, uint64_t n, int dtype);
  // In place sum into `root`'s buffer (other ranks' buffers are left unspecified).
  void reduce_sum(void* data, uint64_t n, int dtype, int root);
  // Ring reduce-scatter, in place: `counts[r]` elements of dtype per member, back to back; afterwards this
  // member's part holds the group's sum (the other parts are left unspecified). `scratch` receives a part.
  void reduce_scatter_sum(void* data, const std::vector<uint64_t>& counts, int dtype, std::vector<char>& scratch);
  // In place allgather: each member's `counts[r]` elements already sit at their place in `data`.
  void allgather_in_place(void* data, const std::vector<uint64_t>& counts, int dtype);
  // dtype only labels the bytes for wire_bytes() (the broadcast copies bytes).
  void broadcast(void* data, uint64_t nbytes, int root, int dtype = 6 /* PERSEUS_ENGINE_UINT8 */);
  // out receives each rank's bytes_per_rank[r] bytes back to back.
  void allgatherv(const void* in, void* out, const std::vector<uint64_t>& bytes_per_rank);
  void barrier();
  // Allgather of one byte string per rank: one collective while every string fits a 1 KiB slot, two else.
  std::vector<std::vector<char>> allgather_bytes(const std::vector<char>& mine);

 // Bytes of payload this rank handed to Gloo on this group, per engine dtype (perseus_engine_dtype), and
  // the collectives that carried them: what a test or a benchmark asks of the wire policy.
  uint64_t wire_bytes(int dtype) const { return dtype >= 0 && dtype < 8 ? bytes_[dtype].load() : 0; }
  uint64_t wire_calls(int dtype) const { return dtype >= 0 && dtype < 8 ? calls_[dtype].load() : 0; }

 private:
  uint32_t next_tag() { return tag_++; }
  void count(int dtype, uint64_t nbytes) {
    if (dtype < 0 || dtype >= 8) return;
    bytes_[dtype] += nbytes;
    ++calls_[dtype];
  }
  std::atomic<uint64_t> bytes_[8] = {}, calls_[8] = {};

  std::string prefix_;
  int rank_, size_;
  std::shared_ptr<gloo::Context> context_;
  std::chrono::milliseconds timeout_;
  uint32_t tag_ = 0;
  std::unique_ptr<ShmChannel> shm_;
};

}  // namespace perseus::engine
