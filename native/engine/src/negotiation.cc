#include "negotiation.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace perseus::engine {

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kAllreduce: return "allreduce";
    case Kind::kBroadcast: return "broadcast";
    case Kind::kAllgather: return "allgather";
    case Kind::kBarrier: return "barrier";
  }
  return "unknown";
}

const char* dtype_name(int dtype) {
  static const char* names[] = {"float32", "float16", "bfloat16", "float64", "int32", "int64", "uint8"};
  return (dtype >= 0 && dtype < 7) ? names[dtype] : "unknown-dtype";
}

size_t dtype_size(int dtype) {
  static const size_t sizes[] = {4, 2, 2, 8, 4, 8, 1};
  return (dtype >= 0 && dtype < 7) ? sizes[dtype] : 0;
}

uint64_t numel(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= uint64_t(d);
  return n;
}

std::string describe(const Request& r) {
  std::string s = kind_name(r.kind);
  if (r.kind == Kind::kBarrier) return s;
  s += std::string(" ") + dtype_name(r.dtype) + "[";
  for (size_t i = 0; i < r.shape.size(); ++i) s += (i ? "," : "") + std::to_string(r.shape[i]);
  s += "]";
  if (r.kind == Kind::kAllreduce) s += r.op == 1 ? " average" : " sum";
  if (r.kind == Kind::kBroadcast) s += " from root " + std::to_string(r.root);
  if (r.device >= 0) s += " of a device buffer";
  return s;
}

// ---- wire format: little-endian fixed-size integers, length-prefixed strings -------------------

namespace {

class Writer {
 public:
  void i64(int64_t v) {
    char b[8];
    std::memcpy(b, &v, 8);
    out.insert(out.end(), b, b + 8);
  }
  void str(const std::string& s) {
    i64(int64_t(s.size()));
    out.insert(out.end(), s.begin(), s.end());
  }
  std::vector<char> out;
};

class Reader {
 public:
  explicit Reader(const std::vector<char>& b) : b_(b) {}
  int64_t i64() {
    need(8);
    int64_t v;
    std::memcpy(&v, b_.data() + pos_, 8);
    pos_ += 8;
    return v;
  }
  std::string str() {
    int64_t n = i64();
    if (n < 0) corrupt();
    need(size_t(n));
    std::string s(b_.data() + pos_, size_t(n));
    pos_ += size_t(n);
    return s;
  }
  bool done() const { return pos_ == b_.size(); }

 private:
  void need(size_t n) {
    if (pos_ + n > b_.size()) corrupt();
  }
  [[noreturn]] void corrupt() { throw std::runtime_error("corrupt negotiation message (a different engine build on another rank?)"); }
  const std::vector<char>& b_;
  size_t pos_ = 0;
};

constexpr int64_t kMagic = 0x5045525345555333;  // "PERSEUS3": the negotiation format's version (3: device)

}  // namespace

std::vector<char> encode(const Announcement& a) {
  Writer w;
  w.i64(kMagic);
  w.i64(a.shutdown ? 1 : 0);
  w.i64(int64_t(a.requests.size()));
  for (const auto& r : a.requests) {
    w.str(r.name);
    w.i64(int64_t(r.kind));
    w.i64(r.dtype);
    w.i64(r.op);
    w.i64(r.root);
    w.i64(r.device >= 0 ? r.device : -1);
    w.i64(int64_t(r.shape.size()));
    for (int64_t d : r.shape) w.i64(d);
  }
  w.i64(int64_t(a.aborts.size()));
  for (const auto& name : a.aborts) w.str(name);
  w.i64(a.position);
  return std::move(w.out);
}

Announcement decode(const std::vector<char>& bytes) {
  Reader rd(bytes);
  if (rd.i64() != kMagic) {
    throw std::runtime_error("negotiation message of another format: every rank must load the same perseus engine build");
  }
  Announcement a;
  a.shutdown = rd.i64() != 0;
  int64_t n = rd.i64();
  if (n < 0 || n > (int64_t(1) << 24)) throw std::runtime_error("corrupt negotiation message");
  for (int64_t i = 0; i < n; ++i) {
    Request r;
    r.name = rd.str();
    int64_t kind = rd.i64();
    if (kind < 0 || kind > 3) throw std::runtime_error("corrupt negotiation message (collective kind)");
    r.kind = Kind(kind);
    r.dtype = int(rd.i64());
    r.op = int(rd.i64());
    r.root = int(rd.i64());
    r.device = int(rd.i64());
    int64_t ndim = rd.i64();
    if (ndim < 0 || ndim > 64) throw std::runtime_error("corrupt negotiation message (ndim)");
    for (int64_t d = 0; d < ndim; ++d) r.shape.push_back(rd.i64());
    a.requests.push_back(std::move(r));
  }
  int64_t aborts = rd.i64();
  if (aborts < 0 || aborts > (int64_t(1) << 24)) throw std::runtime_error("corrupt negotiation message (aborts)");
  for (int64_t i = 0; i < aborts; ++i) a.aborts.push_back(rd.str());
  a.position = rd.i64();
  if (!rd.done()) throw std::runtime_error("corrupt negotiation message (trailing bytes)");
  return a;
}

// ---- matching ---------------------------------------------------------------------------------

namespace {

// What must be equal across ranks: allgather's first dimension may differ.
std::string signature(const Request& r) {
  if (r.kind != Kind::kAllgather || r.shape.empty()) return describe(r);
  Request s = r;
  s.shape[0] = -1;
  return describe(s);
}

}  // namespace

std::string check_match(const std::vector<Request>& per_rank) {
  std::vector<std::pair<std::string, std::vector<int>>> variants;  // signature -> ranks, first-seen order
  for (size_t rank = 0; rank < per_rank.size(); ++rank) {
    std::string sig = signature(per_rank[rank]);
    auto it = std::find_if(variants.begin(), variants.end(), [&](const auto& v) { return v.first == sig; });
    if (it == variants.end()) {
      variants.push_back({sig, {int(rank)}});
    } else {
      it->second.push_back(int(rank));
    }
  }
  if (variants.size() == 1) return "";
  std::string msg = "collective '" + per_rank[0].name + "' does not match across ranks: ";
  for (size_t v = 0; v < variants.size(); ++v) {
    const auto& ranks = variants[v].second;
    msg += v ? "; " : "";
    msg += ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < ranks.size(); ++i) msg += (i ? "," : "") + std::to_string(ranks[i]);
    msg += " submitted " + describe(per_rank[size_t(ranks[0])]);
  }
  msg += ". Every rank must submit the same kind, dtype, shape (allgather: all but the first dimension), "
         "reduce op and root under one name: check that every rank runs the same model and code path";
  return msg;
}

// ---- the replicated table -------------------------------------------------------------------

void Table::add(int rank, const Request& r) {
  if (rank < 0 || rank >= size_) throw std::runtime_error("negotiation: rank " + std::to_string(rank) + " out of range");
  auto it = entries_.find(r.name);
  if (it == entries_.end()) {
    Entry e;
    e.seq = next_seq_++;
    e.present.assign(size_t(size_), false);
    e.per_rank.resize(size_t(size_));
    it = entries_.emplace(r.name, std::move(e)).first;
  }
  Entry& e = it->second;
  if (e.present[size_t(rank)]) {
    throw std::runtime_error("negotiation: rank " + std::to_string(rank) + " announced '" + r.name + "' twice");
  }
  e.present[size_t(rank)] = true;
  e.per_rank[size_t(rank)] = r;
  ++e.count;
}

std::vector<Agreed> Table::take_ready() {
  std::vector<std::pair<uint64_t, Agreed>> ready;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.count == size_) {
      Agreed a;
      a.name = it->first;
      a.per_rank = std::move(it->second.per_rank);
      a.mismatch = check_match(a.per_rank);
      ready.emplace_back(it->second.seq, std::move(a));
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  std::sort(ready.begin(), ready.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<Agreed> out;
  out.reserve(ready.size());
  for (auto& r : ready) out.push_back(std::move(r.second));
  return out;
}

std::string Table::abort(const std::string& name, int timeout_seconds) {
  auto it = entries_.find(name);
  if (it == entries_.end()) return "";
  std::string have, missing;
  for (int r = 0; r < size_; ++r) {
    std::string& list = it->second.present[size_t(r)] ? have : missing;
    list += (list.empty() ? "" : ",") + std::to_string(r);
  }
  std::string msg = "collective '" + name + "' (" + describe(it->second.per_rank[size_t(
                        std::find(it->second.present.begin(), it->second.present.end(), true) -
                        it->second.present.begin())]) +
                    ") was submitted by ranks " + have + " but not by ranks " + missing + " within GLOO_TIMEOUT_SECONDS=" +
                    std::to_string(timeout_seconds) +
                    ": every rank must submit every collective; check that all ranks take the same code path (or "
                    "raise GLOO_TIMEOUT_SECONDS if a rank is only slow)";
  entries_.erase(it);
  return msg;
}

std::vector<std::string> Table::pending_names() const {
  std::vector<std::string> out;
  for (const auto& kv : entries_) out.push_back(kv.first);
  return out;
}

std::vector<std::string> Table::pending_report() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : entries_) {
    std::string ranks;
    for (int r = 0; r < size_; ++r) {
      if (e.present[size_t(r)]) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    }
    out.push_back("'" + name + "' (submitted by ranks " + ranks + " of " + std::to_string(size_) + ")");
  }
  return out;
}

}  // namespace perseus::engine
