#include "shm_channel.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "errors.h"
#include "group.h"
#include "negotiation.h"
#include "reduce_functions.h"
#include "wire.h"

namespace perseus::engine {

namespace {

constexpr uint64_t kMagic = 0x7065727365757331ull;  // "perseus1"
constexpr uint64_t kHeaderBytes = 4096;              // the header and the member slots; buffers follow
constexpr int kSpins = 1000;                          // before sleeping: a peer on another core is often there

// Start time of a process (field 22 of /proc/PID/stat, clock ticks since boot); 0 when it is not visible
// or is a zombie. With the pid it names one process: a pid reused later has another start time.
uint64_t process_start_time(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 1));
  std::string state;
  fields >> state;
  if (state == "Z" || state == "X") return 0;
  std::string field;
  for (int i = 4; i < 22 && fields >> field; ++i) {
  }
  uint64_t start = 0;
  fields >> start;
  return start;
}

void futex_wait(std::atomic<uint32_t>* word, uint32_t seen, std::chrono::milliseconds most) {
  timespec ts{};
  ts.tv_sec = time_t(most.count() / 1000);
  ts.tv_nsec = long(most.count() % 1000) * 1000000L;
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, seen, &ts, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

inline bool reached(uint32_t published, uint32_t round) { return int32_t(published - round) >= 0; }

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

uint64_t random_u64() {
  std::random_device rd;
  return (uint64_t(rd()) << 32) | rd();
}

// Where each member's part starts, in elements, and the end of the last.
std::vector<uint64_t> part_starts(const std::vector<uint64_t>& counts) {
  std::vector<uint64_t> start(counts.size() + 1, 0);
  for (size_t r = 0; r < counts.size(); ++r) start[r + 1] = start[r] + counts[r];
  return start;
}

std::vector<char> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

}  // namespace

struct alignas(64) MemberSlot {
  std::atomic<uint32_t> published;  // rounds this member finished writing (the futex word)
  std::atomic<uint32_t> sleepers;   // members sleeping on `published`
  std::atomic<uint32_t> left;       // 1: this member's channel was destroyed
  int32_t pid;
  uint64_t start_time;
};

struct ShmChannel::Segment {
  uint64_t magic;
  uint64_t token;  // member 0's random number: the segment a name leads to is the one it created
  int32_t members;
  MemberSlot slots[1];  // `members` of them, within kHeaderBytes

  MemberSlot& slot(int m) { return slots[m]; }
};

static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words must be plain 32-bit atomics");

namespace {

uint64_t segment_bytes(int members) { return kHeaderBytes + uint64_t(members) * 2 * ShmChannel::kBufferBytes; }

// /dev/shm also carries what the job's own processes share (torch's DataLoader workers send every batch
// through it), and a container's is often 64 MiB: a segment is made only if half of it stays free.
std::string shm_room_for(uint64_t bytes) {
  struct statvfs fs {};
  if (statvfs("/dev/shm", &fs) != 0) return "";  // shm_open says what is wrong
  const uint64_t total = uint64_t(fs.f_blocks) * fs.f_frsize, free = uint64_t(fs.f_bavail) * fs.f_frsize;
  if (free >= bytes && free - bytes >= total / 2) return "";
  return "/dev/shm has " + std::to_string(free >> 20) + " of " + std::to_string(total >> 20) + " MiB free; a " +
         std::to_string(bytes >> 20) + " MiB segment would leave less than half of it (docker run --shm-size)";
}

// Creates, sizes, reserves and maps the segment `name`; the failure, or "" with *base set.
std::string create_segment(const std::string& name, uint64_t bytes, void** base) {
  std::string failure = shm_room_for(bytes);
  if (!failure.empty()) return failure;
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return std::string("shm_open: ") + std::strerror(errno);
  int err = 0;
  if (ftruncate(fd, off_t(bytes)) != 0) {
    failure = std::string("ftruncate: ") + std::strerror(errno);
  } else if ((err = posix_fallocate(fd, 0, off_t(bytes))) != 0) {
    failure = "reserving " + std::to_string(bytes >> 20) + " MiB in /dev/shm: " + std::strerror(err);
  } else if ((*base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
    failure = std::string("mmap: ") + std::strerror(errno);
  }
  close(fd);
  return failure;
}

}  // namespace

std::unique_ptr<ShmChannel> ShmChannel::attach(Group& group, std::chrono::milliseconds timeout, std::string* why) {
  const int rank = group.rank(), size = group.size();
  if (size < 2) return nullptr;
  if (sizeof(Segment) + sizeof(MemberSlot) * size_t(size) > kHeaderBytes) {
    if (why) *why = "too many members for one segment header";
    return nullptr;  // every member takes this branch: same size everywhere
  }
  const uint64_t bytes = segment_bytes(size);
  std::string name, failure;
  void* base = MAP_FAILED;

  // member 0 creates the segment and reserves its memory, so a full /dev/shm fails here, not with SIGBUS
  if (rank == 0) {
    std::ostringstream unique;
    unique << "/perseus-" << getpid() << "-" << std::hex << random_u64();
    name = unique.str();
    failure = create_segment(name, bytes, &base);
    if (!failure.empty()) {
      shm_unlink(name.c_str());
      name.clear();
    } else {
      auto* s = new (base) Segment{};
      s->members = size;
      s->token = random_u64();
      s->magic = kMagic;
    }
  }
  // round 1: the name and token, or member 0's failure
  std::string offer;
  if (rank == 0) {
    offer = failure.empty() ? name + " " + std::to_string(static_cast<Segment*>(base)->token) : "";
  }
  auto offers = group.allgather_bytes(bytes_of(offer));
  std::string sent(offers[0].begin(), offers[0].end());
  if (sent.empty()) {
    if (why) *why = "member 0 could not create a segment" + (failure.empty() ? std::string() : ": " + failure);
    return nullptr;
  }
  if (rank != 0) {
    std::istringstream in(sent);
    uint64_t token = 0;
    in >> name >> token;
    int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
    struct stat st {};
    if (fd < 0) {
      failure = "shm_open " + name + ": " + std::strerror(errno) + " (another host?)";
    } else if (fstat(fd, &st) != 0 || uint64_t(st.st_size) != bytes) {
      failure = "segment " + name + " has another size";
    } else if ((base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
      failure = std::string("mmap: ") + std::strerror(errno);
    } else {
      auto* s = static_cast<Segment*>(base);
      if (s->magic != kMagic || s->token != token || s->members != size) {
        failure = "segment " + name + " is not member 0's (another host with the same name?)";
      }
    }
    if (fd >= 0) close(fd);
  }
  if (failure.empty()) {
    MemberSlot& mine = static_cast<Segment*>(base)->slot(rank);
    mine.pid = int32_t(getpid());
    mine.start_time = process_start_time(getpid());
  }
  // round 2: every member's result; the slots are written before it
  auto results = group.allgather_bytes(bytes_of(failure));
  if (rank == 0) shm_unlink(name.c_str());  // all mapped it (or gave up): the name is no longer needed
  std::string failed;
  for (int m = 0; m < size; ++m) {
    if (!results[size_t(m)].empty()) {
      failed = "member " + std::to_string(m) + ": " + std::string(results[size_t(m)].begin(), results[size_t(m)].end());
      break;
    }
  }
  if (!failed.empty()) {
    if (base != MAP_FAILED) munmap(base, bytes);
    if (why) *why = failed;
    return nullptr;
  }
  return std::unique_ptr<ShmChannel>(new ShmChannel(group.name(), rank, size, timeout, base, bytes));
}

ShmChannel::ShmChannel(std::string group_name, int rank, int size, std::chrono::milliseconds timeout, void* base,
                       uint64_t bytes)
    : group_name_(std::move(group_name)),
      rank_(rank),
      size_(size),
      timeout_(timeout),
      segment_(static_cast<Segment*>(base)),
      mapped_bytes_(bytes),
      owner_pid_(int(getpid())),
      checkable_(size_t(size), false) {
  for (int m = 0; m < size; ++m) {
    const MemberSlot& s = segment_->slot(m);
    checkable_[size_t(m)] = s.start_time != 0 && process_start_time(s.pid) == s.start_time;
  }
}

ShmChannel::~ShmChannel() {
  if (int(getpid()) == owner_pid_) {
    MemberSlot& mine = segment_->slot(rank_);
    mine.left.store(1, std::memory_order_seq_cst);
    futex_wake_all(&mine.published);
  }
  munmap(segment_, mapped_bytes_);
}

char* ShmChannel::buffer(int member, uint64_t round) const {
  return reinterpret_cast<char*>(segment_) + kHeaderBytes + (uint64_t(member) * 2 + round % 2) * kBufferBytes;
}

void ShmChannel::check_alive(int member) const {
  const MemberSlot& s = segment_->slot(member);
  std::string what;
  if (s.left.load(std::memory_order_acquire)) {
    what = "left the group (its engine shut down or failed)";
  } else if (checkable_[size_t(member)] && process_start_time(s.pid) != s.start_time) {
    what = "exited (process " + std::to_string(s.pid) + ")";
  }
  if (!what.empty()) {
    throw EngineError(PERSEUS_ENGINE_COMMUNICATION, "perseus engine: member " + std::to_string(member) + " of " +
                                                        group_name_ + " " + what + " during a shared-memory collective");
  }
}

void ShmChannel::wait_for(int member, uint32_t round) {
  MemberSlot& s = segment_->slot(member);
  for (int i = 0; i < kSpins; ++i) {
    if (reached(s.published.load(std::memory_order_acquire), round)) return;
    cpu_relax();
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (true) {
    s.sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = s.published.load(std::memory_order_seq_cst);
    if (!reached(seen, round) && !s.left.load(std::memory_order_acquire)) {
      futex_wait(&s.published, seen, std::chrono::milliseconds(100));
    }
    s.sleepers.fetch_sub(1, std::memory_order_seq_cst);
    if (reached(s.published.load(std::memory_order_acquire), round)) return;
    check_alive(member);
    if (std::chrono::steady_clock::now() > deadline) {
      throw EngineError(PERSEUS_ENGINE_COMMUNICATION,
                        "perseus engine: member " + std::to_string(member) + " of " + group_name_ +
                            " did not reach a shared-memory collective within GLOO_TIMEOUT_SECONDS=" +
                            std::to_string(timeout_.count() / 1000));
    }
  }
}

void ShmChannel::finish_round() {
  const uint32_t round = uint32_t(round_ + 1);
  MemberSlot& mine = segment_->slot(rank_);
  mine.published.store(round, std::memory_order_seq_cst);
  if (mine.sleepers.load(std::memory_order_seq_cst) > 0) futex_wake_all(&mine.published);
  for (int m = 0; m < size_; ++m) {
    if (m != rank_) wait_for(m, round);
  }
  ++round_;
}

namespace {

// Elements of `es` bytes in `bytes`, a multiple of 64 bytes (a cache line) when there is room for one.
uint64_t elements_in(uint64_t bytes, size_t es) {
  const uint64_t aligned = bytes >= 64 ? bytes / 64 * 64 : bytes;
  return std::max<uint64_t>(1, aligned / es);
}

uint64_t rounds_for(uint64_t elements, uint64_t per_round) { return (elements + per_round - 1) / per_round; }

}  // namespace

void ShmChannel::reduce_scatter_sum(void* data, const std::vector<uint64_t>& counts, int dtype) {
  const size_t es = dtype_size(dtype);
  const ReduceFunction sum = sum_function(dtype);
  const std::vector<uint64_t> offset = part_starts(counts);
  const uint64_t largest = *std::max_element(counts.begin(), counts.end());
  if (largest == 0) return;
  // each member writes a chunk of every other member's part per round, each at its own place
  const uint64_t per_part = elements_in(kBufferBytes / uint64_t(size_ - 1), es);
  auto place = [](int part, int writer) { return uint64_t(part < writer ? part : part - 1); };
  auto* bytes = static_cast<char*>(data);
  for (uint64_t t = 0, rounds = rounds_for(largest, per_part); t < rounds; ++t) {
    const uint64_t first = t * per_part;
    char* mine = buffer(rank_, round_ + 1);
    for (int q = 0; q < size_; ++q) {
      if (q == rank_ || counts[size_t(q)] <= first) continue;
      const uint64_t n = std::min(per_part, counts[size_t(q)] - first);
      std::memcpy(mine + place(q, rank_) * per_part * es, bytes + (offset[size_t(q)] + first) * es, n * es);
    }
    const uint64_t round = round_ + 1;
    finish_round();
    if (counts[size_t(rank_)] <= first) continue;
    const uint64_t n = std::min(per_part, counts[size_t(rank_)] - first);
    char* target = bytes + (offset[size_t(rank_)] + first) * es;
    for (int m = 0; m < size_; ++m) {
      if (m != rank_) sum(target, target, buffer(m, round) + place(rank_, m) * per_part * es, n);
    }
  }
}

void ShmChannel::allgather_in_place(void* data, const std::vector<uint64_t>& counts, int dtype) {
  const size_t es = dtype_size(dtype);
  const std::vector<uint64_t> offset = part_starts(counts);
  const uint64_t largest = *std::max_element(counts.begin(), counts.end());
  if (largest == 0) return;
  const uint64_t per_round = elements_in(kBufferBytes, es);
  auto* bytes = static_cast<char*>(data);
  for (uint64_t t = 0, rounds = rounds_for(largest, per_round); t < rounds; ++t) {
    const uint64_t first = t * per_round, round = round_ + 1;
    if (counts[size_t(rank_)] > first) {
      const uint64_t n = std::min(per_round, counts[size_t(rank_)] - first);
      std::memcpy(buffer(rank_, round), bytes + (offset[size_t(rank_)] + first) * es, n * es);
    }
    finish_round();
    for (int m = 0; m < size_; ++m) {
      if (m == rank_ || counts[size_t(m)] <= first) continue;
      const uint64_t n = std::min(per_round, counts[size_t(m)] - first);
      std::memcpy(bytes + (offset[size_t(m)] + first) * es, buffer(m, round), n * es);
    }
  }
}

void ShmChannel::allreduce_sum(void* data, uint64_t n, int dtype) {
  const std::vector<uint64_t> counts = shard_counts(n, size_);
  reduce_scatter_sum(data, counts, dtype);
  allgather_in_place(data, counts, dtype);
}

void ShmChannel::reduce_sum(void* data, uint64_t n, int dtype, int root) {
  const size_t es = dtype_size(dtype);
  const ReduceFunction sum = sum_function(dtype);
  const uint64_t per_round = elements_in(kBufferBytes, es);
  auto* bytes = static_cast<char*>(data);
  for (uint64_t first = 0; first < n; first += per_round) {
    const uint64_t count = std::min(per_round, n - first), round = round_ + 1;
    if (rank_ != root) std::memcpy(buffer(rank_, round), bytes + first * es, count * es);
    finish_round();
    if (rank_ != root) continue;
    for (int m = 0; m < size_; ++m) {
      if (m != root) sum(bytes + first * es, bytes + first * es, buffer(m, round), count);
    }
  }
}

void ShmChannel::broadcast(void* data, uint64_t nbytes, int root) {
  auto* bytes = static_cast<char*>(data);
  for (uint64_t first = 0; first < nbytes; first += kBufferBytes) {
    const uint64_t count = std::min(kBufferBytes, nbytes - first), round = round_ + 1;
    if (rank_ == root) std::memcpy(buffer(rank_, round), bytes + first, count);
    finish_round();
    if (rank_ != root) std::memcpy(bytes + first, buffer(root, round), count);
  }
}

}  // namespace perseus::engine
