#include "mpi_loader.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>

#include "../mpi/mpi_bootstrap.h"
#include "errors.h"
#include "options.h"
#include "perseus/variables.h"

namespace perseus::engine {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

// Which MPI started us, from the variables its launcher sets.
std::string flavour() {
  if (env("OMPI_COMM_WORLD_SIZE")) return "openmpi";
  if (env("PMI_SIZE") || env("PMI_RANK") || env("MPI_LOCALNRANKS")) return "mpich";
  throw invalid_argument(
      "perseus engine: no MPI launcher found (neither OMPI_COMM_WORLD_SIZE nor PMI_SIZE is set): start the job "
      "with mpirun, or set MASTER_ADDR and PERSEUS_MASTER_PORT for another launcher");
}

std::string engine_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&options_from_mpi), &info) == 0 || info.dli_fname == nullptr) return ".";
  std::string path = info.dli_fname;
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

void options_from_mpi(perseus_engine_options* o) {
  std::string path;
  std::string kind = "explicit";
  if (const char* explicit_path = setting(PERSEUS_ENV_MPI_BOOTSTRAP_LIBRARY).value) {
    path = explicit_path;
  } else {
    kind = flavour();
    path = engine_dir() + "/libperseus_mpi_" + kind + ".so";
  }
  if (kind == "mpich") {
    // The MPICH plugin names no library (MPICH ABI, soname 12): Debian's MPICH is libmpich.so.12, MPICH's own
    // builds and PyPI's `mpich` are libmpi.so.12. Whichever the job has is loaded first, globally.
    const char* sonames[] = {"libmpi.so.12", "libmpich.so.12"};
    void* mpich = nullptr;
    for (const char* soname : sonames) {
      if ((mpich = dlopen(soname, RTLD_NOW | RTLD_GLOBAL)) != nullptr) break;
    }
    if (mpich == nullptr) {
      throw EngineError(PERSEUS_ENGINE_INVALID_ARGUMENT,
                        "perseus engine: an MPICH job, but neither libmpi.so.12 nor libmpich.so.12 loads: put the "
                        "MPICH that runs the job on the library path (LD_LIBRARY_PATH=<its prefix>/lib; Debian: "
                        "apt-get install libmpich12), or set MASTER_ADDR and PERSEUS_MASTER_PORT instead");
    }
  }
  // RTLD_GLOBAL: Open MPI's own components, loaded by MPI_Init, resolve libmpi's symbols globally
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw EngineError(PERSEUS_ENGINE_INVALID_ARGUMENT,
                      "perseus engine: cannot load the MPI bootstrap plugin " + path + ": " + (why ? why : "") +
                          ". Every wheel ships libperseus_mpi_openmpi.so and libperseus_mpi_mpich.so (reinstall it if one is "
                          "missing); the Open MPI one needs Open MPI 4.x/5.x's libmpi.so.40 on the library path "
                          "(Debian: libopenmpi3); or set "
                          "MASTER_ADDR and PERSEUS_MASTER_PORT instead");
  }
  auto fn = reinterpret_cast<perseus_mpi_bootstrap_fn>(dlsym(handle, "perseus_mpi_bootstrap"));
  if (fn == nullptr) {
    throw invalid_argument("perseus engine: " + path + " has no perseus_mpi_bootstrap: not a bootstrap plugin");
  }
  perseus_mpi_numbers numbers{};
  char err[512] = {0};
  if (fn(&numbers, err, sizeof(err)) != 0) {
    throw EngineError(PERSEUS_ENGINE_COMMUNICATION, std::string("perseus engine: MPI bootstrap failed: ") + err);
  }
  // the plugin stays loaded: MPI is finalised by its atexit handler
  o->rank = numbers.rank;
  o->size = numbers.size;
  o->local_rank = numbers.local_rank;
  o->local_size = numbers.local_size;
  o->node_rank = numbers.node_rank;
  std::snprintf(o->master_addr, sizeof(o->master_addr), "%s", numbers.master_addr);
  o->master_port = numbers.master_port;
  o->serve_store = -1;
}

}  // namespace perseus::engine
