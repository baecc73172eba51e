// Name-keyed negotiation: every cycle each rank announces the collectives submitted since the last
// cycle; all ranks receive every announcement (one allgather on the control context) and apply them
// to the same replicated Table, so every rank derives the same ready list, in the same order, and
// the same mismatch message. Pure data structures: no transport here.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace perseus::engine {

enum class Kind : uint8_t { kAllreduce = 0, kBroadcast = 1, kAllgather = 2, kBarrier = 3 };

struct Request {
  std::string name;
  Kind kind = Kind::kAllreduce;
  int dtype = 0;
  std::vector<int64_t> shape;
  int op = 0;    // allreduce: perseus_engine_reduce_op
  int root = 0;  // broadcast
  int device = -1;  // a CUDA device buffer on that device (its id may differ by rank); -1: host memory
};

const char* kind_name(Kind kind);
const char* dtype_name(int dtype);
size_t dtype_size(int dtype);  // 0 for an unknown dtype
uint64_t numel(const std::vector<int64_t>& shape);
// "allreduce float32[4,5] average"
std::string describe(const Request& r);

// One rank's announcement of a cycle.
struct Announcement {
  bool shutdown = false;
  std::vector<Request> requests;
  std::vector<std::string> aborts;  // rank 0 only: pending collectives every rank gives up (a stall)
  int64_t position = -1;  // PERSEUS_OFFLINE_NEG: plan batches this rank ran, when it leaves the plan
};
std::vector<char> encode(const Announcement& a);
Announcement decode(const std::vector<char>& bytes);  // throws std::runtime_error when corrupt

// A collective every rank announced: each rank's request, and "" or the mismatch message.
struct Agreed {
  std::string name;
  std::vector<Request> per_rank;
  std::string mismatch;
};

// "" when every rank's request is compatible, else the message every rank reports.
std::string check_match(const std::vector<Request>& per_rank);

class Table {
 public:
  explicit Table(int size) : size_(size) {}
  // Throws std::runtime_error when `rank` announces a name it already has pending (a protocol error:
  // the engine refuses a duplicate at submission).
  void add(int rank, const Request& r);
  // Collectives every rank announced, ordered by their first announcement (rank order within a cycle).
  std::vector<Agreed> take_ready();
  size_t pending() const { return entries_.size(); }
  // Removes a pending collective; returns the message every rank reports for it ("" when it is not
  // pending: it completed in the meantime).
  std::string abort(const std::string& name, int timeout_seconds);
  std::vector<std::string> pending_names() const;
  // "name (ranks 0, 2 of 4)" for each pending collective: what a stall report names.
  std::vector<std::string> pending_report() const;

 private:
  struct Entry {
    uint64_t seq;
    std::vector<bool> present;
    std::vector<Request> per_rank;
    int count = 0;
  };
  int size_;
  uint64_t next_seq_ = 0;
  std::map<std::string, Entry> entries_;
};

}  // namespace perseus::engine
