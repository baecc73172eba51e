/* The MPI bootstrap plugin of the perseus engine: under a plain `mpirun` (no MASTER_ADDR), rank 0's
 * address and a free port for the rendezvous store are agreed through MPI itself, with rank, size and
 * the node split from MPI. Built once per MPI implementation against its headers (libperseus_mpi_openmpi.so,
 * ...), loaded by the engine with dlopen only when asked, so the engine needs no MPI otherwise.
 *
 * MPI is initialised here when nobody did it before, and then finalised at exit (atexit). */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <mpi.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mpi_bootstrap.h"

static int g_we_initialised = 0;

static void finalize_at_exit(void) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (g_we_initialised && !finalized) MPI_Finalize();
}

static int fail(char* err, size_t errlen, const char* message) {
  snprintf(err, errlen, "%s", message);
  return 1;
}

/* The first IPv4 address of an UP, non-loopback interface (the one named by `iface` when set). */
static int pick_address(const char* iface, char* out, size_t outlen) {
  struct ifaddrs* list = NULL;
  if (getifaddrs(&list) != 0) return 0;
  int found = 0;
  for (struct ifaddrs* a = list; a != NULL && !found; a = a->ifa_next) {
    if (a->ifa_addr == NULL || a->ifa_addr->sa_family != AF_INET || !(a->ifa_flags & IFF_UP)) continue;
    if (iface != NULL && *iface != '\0' ? strcmp(a->ifa_name, iface) != 0 : (a->ifa_flags & IFF_LOOPBACK) != 0) continue;
    found = inet_ntop(AF_INET, &((struct sockaddr_in*)a->ifa_addr)->sin_addr, out, (socklen_t)outlen) != NULL;
  }
  freeifaddrs(list);
  return found;
}

/* A port that is free now on every address (the store binds it right after the broadcast). */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in addr;
  memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof(addr);
  int port = -1;
  if (bind(fd, (struct sockaddr*)&addr, sizeof(addr)) == 0 && getsockname(fd, (struct sockaddr*)&addr, &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

int perseus_mpi_bootstrap(perseus_mpi_numbers* out, char* err, size_t errlen) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS) return fail(err, errlen, "MPI_Init failed");
    g_we_initialised = 1;
    atexit(finalize_at_exit);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &out->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &out->size);

  MPI_Comm local;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, out->rank, MPI_INFO_NULL, &local) != MPI_SUCCESS) {
    return fail(err, errlen, "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed");
  }
  MPI_Comm_rank(local, &out->local_rank);
  MPI_Comm_size(local, &out->local_size);
  MPI_Comm leaders;
  MPI_Comm_split(MPI_COMM_WORLD, out->local_rank == 0 ? 0 : MPI_UNDEFINED, out->rank, &leaders);
  int node = 0;
  if (out->local_rank == 0) {
    MPI_Comm_rank(leaders, &node);
    MPI_Comm_free(&leaders);
  }
  MPI_Bcast(&node, 1, MPI_INT, 0, local);
  MPI_Comm_free(&local);
  out->node_rank = node;

  /* rank 0: its address and a free port; a negative port carries its failure to every rank */
  struct { char addr[256]; int port; } master;
  memset(&master, 0, sizeof(master));
  if (out->rank == 0) {
    const char* iface = getenv("PERSEUS_GLOO_NETWORK_INTERFACE");
    if (iface == NULL || *iface == '\0') iface = getenv("GLOO_SOCKET_IFNAME");
    if (!pick_address(iface, master.addr, sizeof(master.addr))) {
      if (iface != NULL && *iface != '\0') {
        master.port = -2;
      } else {
        snprintf(master.addr, sizeof(master.addr), "127.0.0.1");  /* a machine without a network */
      }
    }
    if (master.port == 0) master.port = free_port();
  }
  MPI_Bcast(&master, (int)sizeof(master), MPI_BYTE, 0, MPI_COMM_WORLD);
  if (master.port == -2) {
    return fail(err, errlen, "rank 0 has no IPv4 address on the interface named by PERSEUS_GLOO_NETWORK_INTERFACE / "
                             "GLOO_SOCKET_IFNAME: name an interface that is up, or unset it");
  }
  if (master.port <= 0) return fail(err, errlen, "rank 0 found no free TCP port for the rendezvous store");
  snprintf(out->master_addr, sizeof(out->master_addr), "%s", master.addr);
  out->master_port = master.port;
  return 0;
}
