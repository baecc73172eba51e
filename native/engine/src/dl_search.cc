#include "dl_search.h"

#include <cstdlib>
#include <dlfcn.h>
#include <link.h>
#include <mutex>
#include <sys/stat.h>

#include "errors.h"

namespace perseus::engine {
namespace {

std::mutex g_mu;
std::vector<std::string> g_dirs;

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string loaded_path(void* handle) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) return map->l_name;
  return "";
}

// The engine library's folder and its parents: site-packages/perseus/.../libperseus_engine.so finds
// site-packages/nvidia/<package>/lib.
std::vector<std::string> engine_parents() {
  Dl_info info{};
  std::vector<std::string> out;
  if (dladdr(reinterpret_cast<void*>(&add_library_dir), &info) == 0 || info.dli_fname == nullptr) return out;
  std::string dir = info.dli_fname;
  for (int depth = 0; depth < 5; ++depth) {
    auto slash = dir.rfind('/');
    if (slash == std::string::npos || slash == 0) break;
    dir = dir.substr(0, slash);
    out.push_back(dir);
  }
  return out;
}

bool try_open(const std::string& what, int flags, Loaded& out) {
  void* h = dlopen(what.c_str(), flags);
  if (h == nullptr) {
    const char* why = dlerror();
    out.tried.push_back(what + (why ? std::string(" (") + why + ")" : std::string(" (not found)")));
    return false;
  }
  out.handle = h;
  out.path = loaded_path(h);
  if (out.path.empty()) out.path = what;
  return true;
}

}  // namespace

void add_library_dir(const std::string& dir) {
  if (dir.empty()) return;
  std::lock_guard<std::mutex> lock(g_mu);
  for (const auto& d : g_dirs) {
    if (d == dir) return;
  }
  g_dirs.push_back(dir);
}

Loaded load_nvidia_library(const char* variable, const std::vector<std::string>& packages,
                           const std::vector<std::string>& sonames) {
  Loaded out;
  // RTLD_LOCAL: the engine resolves every symbol through dlsym; nothing leaks into the process's namespace
  const int flags = RTLD_NOW | RTLD_LOCAL;
  if (const char* explicit_path = std::getenv(variable); explicit_path != nullptr && *explicit_path != '\0') {
    if (!try_open(explicit_path, flags, out)) out.tried.back() = std::string(variable) + "=" + out.tried.back();
    return out;
  }
  for (const auto& soname : sonames) {  // a copy already in the process (a framework's)
    void* h = dlopen(soname.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (h != nullptr) {
      out.handle = h;
      out.path = loaded_path(h);
      return out;
    }
  }
  std::vector<std::string> dirs;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    dirs = g_dirs;
  }
  for (const auto& d : engine_parents()) dirs.push_back(d);
  std::string folders;
  for (const auto& package : packages) {
    folders += (folders.empty() ? "nvidia/" : ", nvidia/") + package + "/lib";
    for (const auto& dir : dirs) {
      for (const auto& soname : sonames) {
        std::string candidate = dir + "/nvidia/" + package + "/lib/" + soname;
        if (is_file(candidate) && try_open(candidate, flags, out)) return out;
      }
    }
  }
  out.tried.push_back(folders + " under " + std::to_string(dirs.size()) + " site folder(s)");
  for (const auto& soname : sonames) {
    if (try_open(soname, flags, out)) return out;
  }
  return out;
}

void* symbol(const Loaded& lib, const char* name) {
  void* p = dlsym(lib.handle, name);
  if (p == nullptr) {
    throw unsupported(lib.path + " has no " + name + ": it is too old for the perseus engine");
  }
  return p;
}

}  // namespace perseus::engine
