/* The interface between the engine and its MPI bootstrap plugins (dlopen + dlsym "perseus_mpi_bootstrap"). */
#ifndef PERSEUS_MPI_BOOTSTRAP_H
#define PERSEUS_MPI_BOOTSTRAP_H
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
typedef struct perseus_mpi_numbers {
  int rank, size, local_rank, local_size, node_rank;
  char master_addr[256];
  int master_port;
} perseus_mpi_numbers;
/* 0 on success; else non-zero with a message in err. Collective over MPI_COMM_WORLD. */
__attribute__((visibility("default"))) int perseus_mpi_bootstrap(perseus_mpi_numbers* out, char* err, size_t errlen);
typedef int (*perseus_mpi_bootstrap_fn)(perseus_mpi_numbers*, char*, size_t);
#ifdef __cplusplus
}
#endif
#endif
