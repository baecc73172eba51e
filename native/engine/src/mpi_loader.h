// perseus_engine_options_from_mpi: rank, size, node split, master address and a free port from MPI itself,
// through the bootstrap plugin of the MPI that started this process (mpi/mpi_bootstrap.c), loaded at run time.
#pragma once

#include "perseus/engine.h"

namespace perseus::engine {

// Throws EngineError naming what is missing (no MPI launcher, no plugin, MPI's failure).
void options_from_mpi(perseus_engine_options* o);

}  // namespace perseus::engine
