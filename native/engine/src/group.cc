#include "group.h"

#include <cstring>

#include "gloo/allgatherv.h"
#include "gloo/allreduce.h"
#include "gloo/barrier.h"
#include "gloo/broadcast.h"
#include "gloo/reduce.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/prefix_store.h"
#include "gloo/transport/device.h"
#include "negotiation.h"
#include "reduce_functions.h"

namespace perseus::engine {

Group::Group(const std::string& prefix, int rank, int size, gloo::rendezvous::Store& store,
             std::shared_ptr<gloo::transport::Device>& device, std::chrono::milliseconds timeout)
    : prefix_(prefix), rank_(rank), size_(size), timeout_(timeout) {
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->setTimeout(timeout);
  gloo::rendezvous::PrefixStore prefixed(prefix, store);
  context->connectFullMesh(prefixed, device);
  context_ = context;
}

Group::~Group() = default;

void Group::allreduce_sum(void* data, uint64_t n, int dtype) {
  if (size_ == 1 || n == 0) return;
  gloo::AllreduceOptions opts(context_);
  const size_t es = dtype_size(dtype);
  count(dtype, n * es);
  // Gloo only uses the template argument for the element size: the reduce function gives the meaning.
  if (es == 4) {
    opts.setOutput(static_cast<uint32_t*>(data), n);
  } else if (es == 8) {
    opts.setOutput(static_cast<uint64_t*>(data), n);
  } else if (es == 2) {
    opts.setOutput(static_cast<uint16_t*>(data), n);
  } else {
    opts.setOutput(static_cast<uint8_t*>(data), n);
  }
  opts.setReduceFunction(sum_function(dtype));
  opts.setTag(next_tag());
  opts.setTimeout(timeout_);
  gloo::allreduce(opts);
}

void Group::reduce_sum(void* data, uint64_t n, int dtype, int root) {
  if (size_ == 1 || n == 0) return;
  gloo::ReduceOptions opts(context_);
  const size_t es = dtype_size(dtype);
  count(dtype, n * es);
  if (es == 4) {
    opts.setOutput(static_cast<uint32_t*>(data), n);
  } else if (es == 8) {
    opts.setOutput(static_cast<uint64_t*>(data), n);
  } else if (es == 2) {
    opts.setOutput(static_cast<uint16_t*>(data), n);
  } else {
    opts.setOutput(static_cast<uint8_t*>(data), n);
  }
  opts.setRoot(root);
  opts.setReduceFunction(sum_function(dtype));
  opts.setTag(next_tag());
  opts.setTimeout(timeout_);
  gloo::reduce(opts);
}

void Group::broadcast(void* data, uint64_t nbytes, int root, int dtype) {
  if (size_ == 1 || nbytes == 0) return;
  count(dtype, nbytes);
  gloo::BroadcastOptions opts(context_);
  opts.setOutput(static_cast<uint8_t*>(data), nbytes);
  opts.setRoot(root);
  opts.setTag(next_tag());
  opts.setTimeout(timeout_);
  gloo::broadcast(opts);
}

void Group::allgatherv(const void* in, void* out, const std::vector<uint64_t>& bytes_per_rank) {
  uint64_t mine = bytes_per_rank[size_t(rank_)];
  if (size_ == 1) {
    if (mine) std::memcpy(out, in, mine);
    return;
  }
  gloo::AllgathervOptions opts(context_);
  // Gloo wants a non-null input; a rank with 0 bytes passes a pointer to a dummy byte.
  static const uint8_t dummy = 0;
  opts.setInput(const_cast<uint8_t*>(mine ? static_cast<const uint8_t*>(in) : &dummy), mine);
  std::vector<size_t> counts(bytes_per_rank.begin(), bytes_per_rank.end());
  uint8_t sink = 0;
  opts.setOutput(out != nullptr ? static_cast<uint8_t*>(out) : &sink, counts);
  opts.setTag(next_tag());
  opts.setTimeout(timeout_);
  gloo::allgatherv(opts);
}

void Group::barrier() {
  if (size_ == 1) return;
  gloo::BarrierOptions opts(context_);
  opts.setTag(next_tag());
  opts.setTimeout(timeout_);
  gloo::barrier(opts);
}

std::vector<std::vector<char>> Group::allgather_bytes(const std::vector<char>& mine) {
  std::vector<std::vector<char>> out(static_cast<size_t>(size_));
  if (size_ == 1) {
    out[0] = mine;
    return out;
  }
  // One collective in the common case: a fixed slot per rank holds the length and up to kInline bytes;
  // only when some rank's message is longer does a second allgatherv carry the full messages.
  constexpr size_t kSlot = 1024, kInline = kSlot - 8;
  std::vector<char> slot(kSlot, 0);
  uint64_t n = mine.size();
  std::memcpy(slot.data(), &n, 8);
  if (n <= kInline) std::memcpy(slot.data() + 8, mine.data(), n);
  std::vector<char> slots(kSlot * size_t(size_));
  allgatherv(slot.data(), slots.data(), std::vector<uint64_t>(size_t(size_), kSlot));
  std::vector<uint64_t> bytes(static_cast<size_t>(size_));
  bool overflow = false;
  for (int r = 0; r < size_; ++r) {
    std::memcpy(&bytes[size_t(r)], slots.data() + kSlot * size_t(r), 8);
    overflow = overflow || bytes[size_t(r)] > kInline;
  }
  if (!overflow) {
    for (int r = 0; r < size_; ++r) {
      const char* p = slots.data() + kSlot * size_t(r) + 8;
      out[size_t(r)].assign(p, p + bytes[size_t(r)]);
    }
    return out;
  }
  uint64_t total = 0;
  for (uint64_t b : bytes) total += b;
  std::vector<char> joined(total ? total : 1);
  allgatherv(mine.data(), joined.data(), bytes);
  uint64_t offset = 0;
  for (int r = 0; r < size_; ++r) {
    out[size_t(r)].assign(joined.begin() + int64_t(offset), joined.begin() + int64_t(offset + bytes[size_t(r)]));
    offset += bytes[size_t(r)];
  }
  return out;
}

}  // namespace perseus::engine
