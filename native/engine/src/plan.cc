#include "plan.h"

#include <stdexcept>
#include <string>

#include "perseus/core.h"

namespace perseus::engine {
namespace {

std::vector<uint32_t> core_plan(const std::vector<uint64_t>& bytes, int fusion, uint64_t* buckets) {
  std::vector<uint32_t> bucket_of(bytes.size());
  if (perseus_plan_buckets(bytes.data(), bytes.size(), fusion, bucket_of.data(), buckets) != PERSEUS_OK) {
    throw std::runtime_error(std::string("fusion planner: ") + perseus_last_error());
  }
  return bucket_of;
}

}  // namespace

std::vector<std::vector<Unit>> plan_fusion(const std::vector<uint64_t>& numels, size_t element_size, int fusion) {
  std::vector<Unit> units;
  for (size_t t = 0; t < numels.size(); ++t) {
    uint64_t pieces = 1;
    if (fusion < 0) {
      uint64_t bytes = numels[t] * element_size;
      pieces = std::max<uint64_t>(1, (bytes + kPartitionBytes - 1) / kPartitionBytes);
      pieces = std::min<uint64_t>(pieces, std::max<uint64_t>(1, numels[t]));
    }
    uint64_t base = numels[t] / pieces, extra = numels[t] % pieces, offset = 0;
    for (uint64_t k = 0; k < pieces; ++k) {
      uint64_t n = base + (k < extra ? 1 : 0);
      units.push_back({t, offset, n});
      offset += n;
    }
  }
  if (units.empty()) return {};
  std::vector<uint64_t> bytes;
  uint64_t total = 0;
  for (const auto& u : units) {
    bytes.push_back(u.numel * element_size);
    total += u.numel * element_size;
  }
  uint64_t count = 0;
  std::vector<uint32_t> bucket_of = core_plan(bytes, fusion, &count);
  if (fusion < 0) {
    // groups of about kPartitionBytes, or the core's automatic choice when that is finer
    uint64_t wanted = std::min<uint64_t>(128, std::max<uint64_t>(1, (total + kPartitionBytes - 1) / kPartitionBytes));
    if (wanted > count) bucket_of = core_plan(bytes, int(wanted), &count);
  }
  std::vector<std::vector<Unit>> groups(count);
  for (size_t i = 0; i < units.size(); ++i) groups[bucket_of[i]].push_back(units[i]);
  return groups;
}

}  // namespace perseus::engine
