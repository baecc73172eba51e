// Finding the NVIDIA libraries the engine loads at run time (dlopen), never links: libcudart and libnccl.
// Where pip puts them (site-packages/nvidia/<package>/lib), first match wins:
//   1. the variable naming the file (PERSEUS_NCCL_LIBRARY / PERSEUS_CUDART_LIBRARY);
//   2. a copy the process has loaded already (a framework's libnccl.so.2, by soname);
//   3. <dir>/nvidia/<package>/lib for each directory added with add_library_dir() (the Python handle adds
//      the entries of sys.path) and each parent of the engine library's folder (a wheel's site-packages);
//   4. the system's search (LD_LIBRARY_PATH, ldconfig's cache) by soname.
#pragma once

#include <string>
#include <vector>

namespace perseus::engine {

struct Loaded {
  void* handle = nullptr;
  std::string path;                // the file loaded (from dlinfo), "" when none
  std::vector<std::string> tried;  // what was tried and why it failed, for the error message
};

// packages: the folders under nvidia/ that pip's wheels use for the library ("nccl"; "cuda_runtime" for the CUDA 12
// wheels, "cu13" for CUDA 13's nvidia-cuda-runtime); sonames in order of preference.
Loaded load_nvidia_library(const char* variable, const std::vector<std::string>& packages,
                           const std::vector<std::string>& sonames);

// Adds a site-packages-like folder (one that may hold nvidia/<package>/lib) to step 3's search.
void add_library_dir(const std::string& dir);

// dlsym that throws naming the library when a symbol is missing.
void* symbol(const Loaded& lib, const char* name);

}  // namespace perseus::engine
