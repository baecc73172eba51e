// Who this process is in the job, from the launcher's variables (the C++ counterpart of the part of
// perseus.launch.detect() that Caffe jobs use: perseusrun / torchrun, Open MPI, MPICH / Hydra).
#pragma once

#include <map>
#include <string>

namespace perseus::caffe {

struct LaunchEnv {
  std::string launcher = "single";  // single | perseusrun | torchrun | openmpi | mpich
  int rank = 0, size = 1, local_rank = 0, local_size = 1, node_rank = 0;
  std::string master_addr;  // empty: none given
  int master_port = 6666;   // PERSEUS_MASTER_PORT
  bool use_mpi_bootstrap = false;  // a plain mpirun without MASTER_ADDR: MPI agrees the rest
};

using Environ = std::map<std::string, std::string>;
Environ process_environ();
// Throws std::invalid_argument naming the variable for a bad or contradictory value.
LaunchEnv detect(const Environ& env);

}  // namespace perseus::caffe
