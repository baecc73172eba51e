#include "group.h"

#include <algorithm>
#include <cstring>

#include "gloo/allgatherv.h"
#include "gloo/allreduce.h"
#include "gloo/barrier.h"
#include "gloo/broadcast.h"
#include "gloo/reduce.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/prefix_store.h"
#include "gloo/transport/device.h"
#include "gloo/transport/unbound_buffer.h"
#include "gloo/types.h"
#include "negotiation.h"
#include "reduce_functions.h"
#include "shm_channel.h"

namespace perseus::engine {
namespace {

// Gloo's own collectives use slot prefixes 0x01-0x08 (gloo/types.h).
constexpr uint8_t kReduceScatterSlotPrefix = 0x50;

}  // namespace

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

bool Group::share_memory(std::string* why) {
  if (size_ > 1 && !shm_) shm_ = ShmChannel::attach(*this, timeout_, why);
  return shm_ != nullptr;
}

void Group::allreduce_sum(void* data, uint64_t n, int dtype) {
  if (size_ == 1 || n == 0) return;
  gloo::AllreduceOptions opts(context_);
  const size_t es = dtype_size(dtype);
  count(dtype, n * es);
  if (shm_) return shm_->allreduce_sum(data, n, dtype);
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
  if (shm_) return shm_->reduce_sum(data, n, dtype, root);
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
  if (shm_) return shm_->broadcast(data, nbytes, root);
  gloo::BroadcastOptions opts(context_);
  opts.setOutput(static_cast<uint8_t*>(data), nbytes);
  opts.setRoot(root);
  opts.setTag(next_tag());
  opts.setTimeout(timeout_);
  gloo::broadcast(opts);
}

void Group::reduce_scatter_sum(void* data, const std::vector<uint64_t>& counts, int dtype,
                               std::vector<char>& scratch) {
  if (size_ == 1) return;
  const size_t es = dtype_size(dtype);
  std::vector<size_t> offset(counts.size() + 1, 0);  // in bytes
  size_t largest = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    offset[r + 1] = offset[r] + counts[r] * es;
    largest = std::max<size_t>(largest, counts[r] * es);
  }
  if (offset.back() == 0) return;
  count(dtype, offset.back());
  if (shm_) return shm_->reduce_scatter_sum(data, counts, dtype);
  const ReduceFunction sum = sum_function(dtype);
  if (scratch.size() < largest) scratch.resize(largest);
  auto* bytes = static_cast<char*>(data);
  auto buffer = context_->createUnboundBuffer(data, offset.back());
  auto incoming = context_->createUnboundBuffer(scratch.data(), largest);
  const uint64_t slot = gloo::Slot::build(kReduceScatterSlotPrefix, next_tag());
  const int right = (rank_ + 1) % size_, left = (rank_ + size_ - 1) % size_;
  // Step k sends the part this member has summed so far (k + 1 contributions) to the right and adds the
  // left's into the next one; after size - 1 steps the part numbered like this member holds every
  // contribution, added in ring order.
  for (int k = 0; k < size_ - 1; ++k) {
    const size_t out = size_t((rank_ - k - 1 + 2 * size_) % size_);
    const size_t in = size_t((rank_ - k - 2 + 2 * size_) % size_);
    const size_t out_bytes = offset[out + 1] - offset[out], in_bytes = offset[in + 1] - offset[in];
    if (out_bytes) buffer->send(right, slot, offset[out], out_bytes);
    if (in_bytes) incoming->recv(left, slot, 0, in_bytes);
    if (in_bytes) {
      incoming->waitRecv(timeout_);
      sum(bytes + offset[in], bytes + offset[in], scratch.data(), in_bytes / es);
    }
    if (out_bytes) buffer->waitSend(timeout_);
  }
}

void Group::allgather_in_place(void* data, const std::vector<uint64_t>& counts, int dtype) {
  if (size_ == 1) return;
  const size_t es = dtype_size(dtype);
  uint64_t n = 0;
  for (uint64_t c : counts) n += c;
  if (n == 0) return;
  count(dtype, n * es);
  if (shm_) return shm_->allgather_in_place(data, counts, dtype);
  gloo::AllgathervOptions opts(context_);
  std::vector<size_t> bytes;  // Gloo only needs the element size to cut the buffer: bytes do
  for (uint64_t c : counts) bytes.push_back(size_t(c * es));
  opts.setOutput(static_cast<uint8_t*>(data), std::move(bytes));
  opts.setTag(next_tag());
  opts.setTimeout(timeout_);
  gloo::allgatherv(opts);
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
