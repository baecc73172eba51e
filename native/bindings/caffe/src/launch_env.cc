#include "launch_env.h"

#include <stdexcept>

extern char** environ;

namespace perseus::caffe {
namespace {

const std::string* find(const Environ& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

int integer(const Environ& env, const char* name, int fallback, int min_value) {
  const std::string* raw = find(env, name);
  if (raw == nullptr) return fallback;
  size_t used = 0;
  long value = 0;
  try {
    value = std::stol(*raw, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != raw->size() || value < min_value || value > 1 << 30) {
    throw std::invalid_argument("perseus-caffe: " + std::string(name) + "=" + *raw + " is not an integer >= " +
                                std::to_string(min_value) + ": fix or unset it");
  }
  return static_cast<int>(value);
}

void check(const LaunchEnv& e, const char* rank_var, const char* local_var) {
  if (e.rank >= e.size) {
    throw std::invalid_argument("perseus-caffe: " + std::string(rank_var) + "=" + std::to_string(e.rank) +
                                " is not below the world size " + std::to_string(e.size));
  }
  if (e.local_rank >= e.local_size || e.local_size > e.size) {
    throw std::invalid_argument("perseus-caffe: " + std::string(local_var) + "=" + std::to_string(e.local_rank) +
                                " does not fit the local size " + std::to_string(e.local_size) + " (world size " +
                                std::to_string(e.size) + ")");
  }
}

}  // namespace

Environ process_environ() {
  Environ env;
  for (char** p = environ; p != nullptr && *p != nullptr; ++p) {
    std::string entry(*p);
    auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

LaunchEnv detect(const Environ& env) {
  LaunchEnv e;
  e.master_port = integer(env, "PERSEUS_MASTER_PORT", 6666, 1);
  if (e.master_port > 65535) throw std::invalid_argument("perseus-caffe: PERSEUS_MASTER_PORT is not a port (1-65535)");
  if (const std::string* addr = find(env, "MASTER_ADDR")) e.master_addr = *addr;
  if (find(env, "RANK") && find(env, "WORLD_SIZE")) {
    const std::string* who = find(env, "PERSEUS_LAUNCHER");
    e.launcher = who && *who == "perseusrun" ? "perseusrun" : "torchrun";
    e.size = integer(env, "WORLD_SIZE", 1, 1);
    e.rank = integer(env, "RANK", 0, 0);
    e.local_size = integer(env, "LOCAL_WORLD_SIZE", e.size, 1);
    e.local_rank = integer(env, "LOCAL_RANK", e.rank % e.local_size, 0);
    e.node_rank = integer(env, "GROUP_RANK", e.rank / e.local_size, 0);
    check(e, "RANK", "LOCAL_RANK");
  } else if (find(env, "OMPI_COMM_WORLD_SIZE")) {
    e.launcher = "openmpi";
    e.size = integer(env, "OMPI_COMM_WORLD_SIZE", 1, 1);
    e.rank = integer(env, "OMPI_COMM_WORLD_RANK", 0, 0);
    e.local_size = integer(env, "OMPI_COMM_WORLD_LOCAL_SIZE", e.size, 1);
    e.local_rank = integer(env, "OMPI_COMM_WORLD_LOCAL_RANK", e.rank % e.local_size, 0);
    e.node_rank = e.rank / e.local_size;
    check(e, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK");
  } else if (find(env, "PMI_SIZE")) {
    e.launcher = "mpich";
    e.size = integer(env, "PMI_SIZE", 1, 1);
    e.rank = integer(env, "PMI_RANK", 0, 0);
    e.local_size = integer(env, "MPI_LOCALNRANKS", e.size, 1);
    e.local_rank = integer(env, "MPI_LOCALRANKID", e.rank % e.local_size, 0);
    e.node_rank = e.rank / e.local_size;
    check(e, "PMI_RANK", "MPI_LOCALRANKID");
  }
  if (e.size > 1 && e.master_addr.empty()) {
    if (e.launcher == "openmpi" || e.launcher == "mpich") {
      e.use_mpi_bootstrap = true;  // a plain mpirun: rank 0's address and a free port through MPI
    } else {
      throw std::invalid_argument("perseus-caffe: no MASTER_ADDR for a " + std::to_string(e.size) + "-process job (" +
                                  e.launcher + "): set MASTER_ADDR to rank 0's address and PERSEUS_MASTER_PORT to a "
                                  "free port there");
    }
  }
  return e;
}

}  // namespace perseus::caffe
