/* perseus/engine.h: the C ABI of the AIACC-Training (Perseus) communication engine.
 *
 * One engine for every framework: no framework header, host buffers in and out, its own threads.
 * Transport: Gloo's TCP transport (statically linked, hidden). Rendezvous: a TCP key-value store
 * served by rank 0 (or by a launcher) at master_addr:master_port.
 *
 * Usage: perseus_engine_options_new() -> set rank/size/local/node/master numbers by name (the Python
 * handle takes them from perseus.launch.detect()) -> perseus_engine_options_from_env() for the
 * PERSEUS_* wire policy and GLOO_TIMEOUT_SECONDS -> perseus_engine_create(). Submit collectives by
 * name; every rank must submit a collective of the same name, kind, dtype and shape (first
 * dimension free for allgather); ranks may submit them in different orders: a background thread
 * agrees the order with the other ranks each cycle. A submitted buffer must stay alive and untouched
 * until perseus_engine_wait() returns for its handle.
 *
 * Errors: every function returns a perseus_engine_status; perseus_engine_last_error() then holds a
 * message for this thread naming the problem and the fix. A collective that fails on one rank
 * because the ranks disagree fails with the same message on every rank.
 */
#ifndef PERSEUS_ENGINE_H
#define PERSEUS_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define PERSEUS_ENGINE_API __attribute__((visibility("default")))
#else
#define PERSEUS_ENGINE_API
#endif

#define PERSEUS_ENGINE_ABI_VERSION 5 /* 3: device buffers (CUDA); 4: shared memory inside a node; 5: options by name */

typedef enum perseus_engine_status {
  PERSEUS_ENGINE_OK = 0,
  PERSEUS_ENGINE_INVALID_ARGUMENT = 1, /* a bad value from the caller */
  PERSEUS_ENGINE_UNSUPPORTED = 2,      /* not supported by this engine (the message says what) */
  PERSEUS_ENGINE_COMMUNICATION = 3,    /* a peer was lost, a timeout, a rendezvous failure */
  PERSEUS_ENGINE_MISMATCH = 4,         /* the ranks submitted different collectives under one name */
  PERSEUS_ENGINE_NONFINITE = 5,        /* PERSEUS_ALLREDUCE_NANCHECK found inf/NaN in a result */
  PERSEUS_ENGINE_SHUT_DOWN = 6,        /* the engine (here or on another rank) was shut down */
  PERSEUS_ENGINE_PENDING = 7           /* perseus_engine_poll: not done yet */
} perseus_engine_status;

typedef enum perseus_engine_dtype {
  PERSEUS_ENGINE_FLOAT32 = 0,
  PERSEUS_ENGINE_FLOAT16 = 1,
  PERSEUS_ENGINE_BFLOAT16 = 2,
  PERSEUS_ENGINE_FLOAT64 = 3,
  PERSEUS_ENGINE_INT32 = 4,
  PERSEUS_ENGINE_INT64 = 5,
  PERSEUS_ENGINE_UINT8 = 6
} perseus_engine_dtype;

typedef enum perseus_engine_reduce_op {
  PERSEUS_ENGINE_SUM = 0,
  PERSEUS_ENGINE_AVERAGE = 1 /* floating-point dtypes only */
} perseus_engine_reduce_op;

#define PERSEUS_ENGINE_MAX_DIMS 8

/* The options an engine is made with, opaque: set and read them by name (perseus_engine_options_set/_get).
 * Who this process is, from the launcher (perseus.launch.detect() on the Python side): rank, size, local_rank,
 * local_size, node_rank (ranks with equal node_rank form a node), master_addr and master_port (the rendezvous
 * store: PERSEUS_MASTER_PORT), serve_store (-1: rank 0 serves it, 1: this process, 0: a launcher), hostname (the
 * address this rank's Gloo pairs listen on when no interface is named; "": automatic) and stream_tuning (1: measure
 * 1 stream against `streams` on the first large dispatches and keep the fewest unless more are 3% faster; 0: use
 * `streams` as given; setting `streams` sets it to 0). Every other option is set by a PERSEUS_* variable, declared
 * once in perseus.config with its engine field (wire_dtype, mode, gradient_scale, streams, fusion, nancheck,
 * timeout_seconds, cycle_ms, iface, offline_neg, shm_disable, ...): perseus_engine_option_name() lists them all. */
typedef struct perseus_engine_options perseus_engine_options;

typedef struct perseus_engine_info {
  int rank, size, local_rank, local_size, node, num_nodes, streams;
  int hierarchical;   /* fp32 allreduce runs on two levels */
  int intra_fp16;     /* fp16 on the wire inside a node (or on the one level) */
  int inter_fp16;     /* fp16 on the wire between node leaders (or on the one level) */
  uint64_t collectives;      /* Gloo collectives this rank issued (negotiation excluded) */
  uint64_t fused_groups;     /* allreduce groups that carried more than one tensor */
  uint64_t negotiation_cycles;
  uint64_t offline_batches;  /* batches run from the offline plan (PERSEUS_OFFLINE_NEG=1) */
  int offline;               /* 1: the offline plan is in use */
  int plan_collectives;      /* collectives in the offline plan (0: none yet) */
  uint64_t renegotiations;   /* times the ranks left the plan together and negotiated again */
  int streams_in_use;        /* the streams fused groups spread over now (the tuner's choice) */
  int stream_tuning;         /* 0: fixed, 1: measuring, 2: decided */
  double tuned_seconds_per_gib_one, tuned_seconds_per_gib_all; /* decided: the slowest rank's figures */
  int shared_memory_groups;  /* this rank's groups inside a node that exchange through shared memory */
  int node_groups;           /* this rank's groups inside a node with more than one rank */
} perseus_engine_info;

typedef struct perseus_engine perseus_engine;
typedef int64_t perseus_engine_handle;

PERSEUS_ENGINE_API int perseus_engine_abi_version(void);
PERSEUS_ENGINE_API const char* perseus_engine_last_error(void);
PERSEUS_ENGINE_API const char* perseus_engine_status_string(perseus_engine_status status);

/* New options holding the defaults (rank 0 of 1, master 127.0.0.1, each variable's declared default); free them
 * with perseus_engine_options_free(). */
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_options_new(perseus_engine_options** options);
PERSEUS_ENGINE_API void perseus_engine_options_free(perseus_engine_options* options);
/* One option by its field name or its variable's name, as text ("2", "0.5", "eth0"), under the variable's declared
 * rule: a bad value fails naming it and what it accepts; an unknown name fails listing the known ones. */
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_options_set(perseus_engine_options* options, const char* name,
                                                                    const char* value);
/* One option as text into `out` (capacity bytes, NUL-terminated). */
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_options_get(const perseus_engine_options* options,
                                                                    const char* name, char* out, size_t capacity);
/* The options' field names, index 0.. (NULL past the last); kind: 0 integer, 1 number, 2 text; variable: the
 * PERSEUS_* variable that sets it, or NULL for who-this-process-is fields. */
PERSEUS_ENGINE_API const char* perseus_engine_option_name(int index, int* kind, const char** variable);
/* Reads every variable of the generated option table (perseus/variables.h: PERSEUS_ALLREDUCE_DTYPE, _MODE,
 * _GRADIENT_SCALE, _STREAMS, _FUSION, _NANCHECK, PERSEUS_CYCLE_TIME_MS, PERSEUS_OFFLINE_NEG, PERSEUS_SHM_DISABLE,
 * GLOO_TIMEOUT_SECONDS, PERSEUS_GLOO_NETWORK_INTERFACE, ... and their aliases), GLOO_SOCKET_IFNAME when no interface
 * is named, and PERSEUS_STORE_ADDR (HOST:PORT of the store perseusrun serves: master_addr, master_port,
 * serve_store = 0); a bad value fails naming the variable and what it accepts. */
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_options_from_env(perseus_engine_options* options);

/* Under a plain mpirun (no MASTER_ADDR): rank, size, local rank/size, node rank, rank 0's address and a
 * free port, agreed through MPI by the bootstrap plugin of the MPI that started the job
 * (libperseus_mpi_openmpi.so beside the engine library, or PERSEUS_MPI_BOOTSTRAP_LIBRARY). Collective:
 * every rank calls it. MPI is initialised if needed and then finalised at exit. */
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_options_from_mpi(perseus_engine_options* options);

/* Rendezvous with the other ranks and connect every Gloo context; blocks up to timeout_seconds. */
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_create(const perseus_engine_options* options,
                                                               perseus_engine** engine);
/* Shuts the engine down on every rank (collectives not yet agreed fail with PERSEUS_ENGINE_SHUT_DOWN),
 * joins its threads and frees it. Returns the first communication error seen, if any. */
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_destroy(perseus_engine* engine);
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_info_get(perseus_engine* engine,
                                                                 perseus_engine_info* info);

/* In place: buffer holds this rank's tensor and receives the reduced one. */
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_allreduce(
    perseus_engine* engine, const char* name, void* buffer, perseus_engine_dtype dtype, int ndim,
    const int64_t* shape, perseus_engine_reduce_op op, perseus_engine_handle* handle);
/* In place: root's buffer is copied into every rank's. */
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_broadcast(
    perseus_engine* engine, const char* name, void* buffer, perseus_engine_dtype dtype, int ndim,
    const int64_t* shape, int root, perseus_engine_handle* handle);
/* Concatenates every rank's tensor along the first dimension (sizes may differ by rank); the result
 * is held by the engine: read it with perseus_engine_allgather_result() after the wait. */
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_allgather(
    perseus_engine* engine, const char* name, const void* buffer, perseus_engine_dtype dtype, int ndim,
    const int64_t* shape, perseus_engine_handle* handle);
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_barrier(perseus_engine* engine, const char* name,
                                                                perseus_engine_handle* handle);

/* PERSEUS_ENGINE_PENDING until the collective completed (OK) or failed (its error). */
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_poll(perseus_engine* engine, perseus_engine_handle handle);
/* Blocks until the collective completed or failed. The handle stays valid until released. */
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_wait(perseus_engine* engine, perseus_engine_handle handle);
/* After a successful wait of an allgather: first_dims[size] receives each rank's first dimension,
 * out (out_bytes, at least the total) the concatenation. Either may be NULL (then only
 * *total_bytes is written). */
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_allgather_result(
    perseus_engine* engine, perseus_engine_handle handle, int64_t* first_dims, void* out, uint64_t out_bytes,
    uint64_t* total_bytes);
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_release(perseus_engine* engine, perseus_engine_handle handle);

/* ---- gradients --------------------------------------------------------------------------------
 * In place fp32 gradient allreduce with gossip downsampling (PERSEUS_DOWNSAMPLE_N_ELEMENTS = n,
 * PERSEUS_GRADIENT_MOMENTUM = momentum): at the k-th call under `name` only the elements i with
 * i % n == k % n travel (through the ordinary allreduce and its wire policy, named "<name>#ds<k % n>");
 * the others keep their gradient in the engine's residual for `name` (decayed by momentum per call) and
 * read 0 when the handle completes (perseus_engine_wait / _poll). n = 1 sends everything. */
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_allreduce_downsampled(
    perseus_engine* engine, const char* name, float* buffer, int64_t numel, int n, float momentum,
    perseus_engine_reduce_op op, perseus_engine_handle* handle);
/* Payload bytes of `dtype` this rank handed to the transport on `level` ("all": one-level collectives,
 * "node": inside the node, "leaders": between nodes (the node leaders, or on nodes of equal size every
 * rank with its peers), "control": negotiation) and the collectives that carried them. */
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_wire_bytes(perseus_engine* engine, const char* level,
                                                                   perseus_engine_dtype dtype, uint64_t* bytes,
                                                                   uint64_t* collectives);
/* The rendezvous store alone, for a launcher that serves it for the jobs it starts (perseusrun): it
 * listens on host:port (host "" = every interface, port 0 = a free one, read with _store_port) and serves
 * until stopped; the ranks then connect with serve_store = 0. */
typedef struct perseus_engine_store perseus_engine_store;
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_store_serve(const char* host, int port,
                                                                    perseus_engine_store** store);
PERSEUS_ENGINE_API int perseus_engine_store_port(perseus_engine_store* store);
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_store_stop(perseus_engine_store* store);

/* ---- device buffers (CUDA) ---------------------------------------------------------------------
 * A collective on memory of CUDA device `device` (the id as this process numbers its devices; it may
 * differ by rank). The caller must have finished writing the buffer (synchronised its stream) before the
 * submit; the result is in place when perseus_engine_wait() returns. Ranks agree the order as for host
 * buffers (a device buffer on one rank and a host buffer on another is a mismatch). Transport: NCCL when
 * every rank has libnccl.so.2 (pip install nvidia-nccl-cu12; loaded at run time, never linked) and a GPU of
 * its own; otherwise Gloo with host staging (cudaMemcpy). The fp32 fp16-wire policy (DTYPE=0) compresses on
 * the device with the core's CUDA kernels. libcudart is loaded at run time too: without a device nothing
 * CUDA is loaded, and a device submit fails with PERSEUS_ENGINE_UNSUPPORTED, "not supported: no CUDA device
 * visible (cudaGetDeviceCount=...)". A library built without -DPERSEUS_ENGINE_DEVICE=ON fails every call
 * below with PERSEUS_ENGINE_UNSUPPORTED saying so. */
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_allreduce_device(
    perseus_engine* engine, const char* name, void* device_buffer, perseus_engine_dtype dtype, int ndim,
    const int64_t* shape, perseus_engine_reduce_op op, int device, perseus_engine_handle* handle);
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_broadcast_device(
    perseus_engine* engine, const char* name, void* device_buffer, perseus_engine_dtype dtype, int ndim,
    const int64_t* shape, int root, int device, perseus_engine_handle* handle);

typedef struct perseus_engine_device_report {
  int built;                 /* 1: this library has the device backend (-DPERSEUS_ENGINE_DEVICE=ON) */
  int cuda_kernels;          /* 1: the core's CUDA kernels are in (fp16 wire compressed on the device) */
  int cuda_runtime_version;  /* cudaRuntimeGetVersion, 0: no CUDA runtime loaded */
  int device_count;          /* cudaGetDeviceCount (0 on an error) */
  int device_count_status;   /* its cudaError_t; -1: no CUDA runtime loaded */
  int nccl_version;          /* ncclGetVersion (22105 = 2.21.5); 0: NCCL not loaded */
  char cuda_library[512];    /* the libcudart file loaded ("" if none) */
  char nccl_library[512];    /* the libnccl file loaded ("" if none) */
  char cuda_message[1024];   /* why there is no device ("" when there is one) */
  char nccl_message[1024];   /* why NCCL is not usable ("" when it is) */
} perseus_engine_device_report;
/* Loads the CUDA runtime and NCCL (once per process; needs no device) and reports what it found. */
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_device_report_get(perseus_engine_device_report* report);
/* A folder that may hold nvidia/<package>/lib (a site-packages folder): searched for libnccl.so.2 and
 * libcudart.so.12 after PERSEUS_NCCL_LIBRARY / PERSEUS_CUDART_LIBRARY and a copy already loaded, before the
 * system's search. The Python handle adds sys.path's entries. Call before the first device use. */
PERSEUS_ENGINE_API perseus_engine_status perseus_engine_library_dir_add(const char* dir);

#ifdef __cplusplus
}
#endif
#endif /* PERSEUS_ENGINE_H */
