#include "dispatch.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "../status.h"
#include "perseus/variables.h"

namespace perseus {
namespace cpu {
namespace {

struct Path {
  const char* name;
  const Kernels& (*kernels)();
  bool (*supported)();
};

bool always() { return true; }

#if defined(PERSEUS_HAVE_X86_KERNELS)
bool has_avx2() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
         __builtin_cpu_supports("fma") && __builtin_cpu_supports("popcnt");
}
bool has_avx512() {
  return has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}
#endif
#if defined(PERSEUS_HAVE_AVX512BF16_KERNELS)
bool has_avx512_bf16() { return has_avx512() && __builtin_cpu_supports("avx512bf16"); }
#endif

// Every path built into this library, worst first.
const std::vector<Path>& built_paths() {
  static const std::vector<Path> paths = {
      {"scalar", scalar_kernels, always},
#if defined(PERSEUS_HAVE_X86_KERNELS)
      {"avx2", avx2_kernels, has_avx2},
      {"avx512", avx512_kernels, has_avx512},
#endif
#if defined(PERSEUS_HAVE_AVX512BF16_KERNELS)
      {"avx512_bf16", avx512_bf16_kernels, has_avx512_bf16},
#endif
  };
  return paths;
}

const Kernels* best_supported() {
  const Kernels* best = nullptr;
  for (const Path& path : built_paths()) {
    if (path.supported()) best = &path.kernels();
  }
  return best;
}

std::string path_list(bool only_supported) {
  std::string out;
  for (const Path& path : built_paths()) {
    if (only_supported && !path.supported()) continue;
    if (!out.empty()) out += ' ';
    out += path.name;
  }
  return out;
}

// Resolves a path name; "auto" (or empty) is the best this CPU supports.
perseus_status resolve(const char* name, const char* origin, const Kernels** out) {
  const std::string wanted = name ? name : "";
  if (wanted.empty() || wanted == "auto") {
    *out = best_supported();
    return ok();
  }
  for (const Path& path : built_paths()) {
    if (wanted != path.name) continue;
    if (!path.supported()) {
      return fail(PERSEUS_ERR_UNSUPPORTED, std::string(origin) + "'" + wanted +
                                               "': this CPU cannot run that path (it has: " +
                                               path_list(true) + "); use one of those or 'auto'");
    }
    *out = &path.kernels();
    return ok();
  }
  return fail(PERSEUS_ERR_INVALID_ARGUMENT, std::string(origin) + "'" + wanted +
                                                "': unknown dispatch path; use one of: auto " +
                                                path_list(false));
}

std::atomic<const Kernels*> g_active{nullptr};
std::mutex g_init_mutex;

}  // namespace

perseus_status active_kernels(const Kernels** kernels) {
  const Kernels* current = g_active.load(std::memory_order_acquire);
  if (current == nullptr) {
    std::lock_guard<std::mutex> lock(g_init_mutex);
    current = g_active.load(std::memory_order_acquire);
    if (current == nullptr) {
      const perseus_status status = resolve(std::getenv(PERSEUS_ENV_CPU_DISPATCH), PERSEUS_ENV_CPU_DISPATCH "=", &current);
      if (status != PERSEUS_OK) return status;  // asked again (and failing again) on the next call
      g_active.store(current, std::memory_order_release);
    }
  }
  *kernels = current;
  return PERSEUS_OK;
}

}  // namespace cpu
}  // namespace perseus

extern "C" {

const char* perseus_cpu_features(void) {
  static const std::string features = [] {
    std::string out;
#if defined(__x86_64__) || defined(__i386__)
    const struct {
      const char* label;
      bool present;
    } flags[] = {
        {"popcnt", __builtin_cpu_supports("popcnt") != 0},
        {"f16c", __builtin_cpu_supports("f16c") != 0},
        {"fma", __builtin_cpu_supports("fma") != 0},
        {"avx2", __builtin_cpu_supports("avx2") != 0},
        {"avx512f", __builtin_cpu_supports("avx512f") != 0},
        {"avx512bw", __builtin_cpu_supports("avx512bw") != 0},
        {"avx512vl", __builtin_cpu_supports("avx512vl") != 0},
        {"avx512dq", __builtin_cpu_supports("avx512dq") != 0},
        {"avx512bf16", __builtin_cpu_supports("avx512bf16") != 0},
    };
    for (const auto& flag : flags) {
      if (!flag.present) continue;
      if (!out.empty()) out += ' ';
      out += flag.label;
    }
#endif
    return out;
  }();
  return features.c_str();
}

const char* perseus_dispatch_paths(void) {
  static const std::string paths = perseus::cpu::path_list(true);
  return paths.c_str();
}

const char* perseus_dispatch_name(void) {
  const perseus::cpu::Kernels* kernels = nullptr;
  if (perseus::cpu::active_kernels(&kernels) != PERSEUS_OK) return "invalid";
  return kernels->name;
}

perseus_status perseus_set_dispatch(const char* name) {
  const perseus::cpu::Kernels* kernels = nullptr;
  const perseus_status status = perseus::cpu::resolve(name, "dispatch path ", &kernels);
  if (status != PERSEUS_OK) return status;
  std::lock_guard<std::mutex> lock(perseus::cpu::g_init_mutex);
  perseus::cpu::g_active.store(kernels, std::memory_order_release);
  return PERSEUS_OK;
}

}  // extern "C"
