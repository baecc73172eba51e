// The PERSEUS_* variables, generated from their one declaration (native/runtime/perseus/config.py)
// by `aiacc-build variables --write`: do not edit. Native code reads a variable by its
// PERSEUS_ENV_* name; its default when unset is PERSEUS_DEFAULT_* (none: an automatic choice).
#ifndef PERSEUS_VARIABLES_H_
#define PERSEUS_VARIABLES_H_

/* PERSEUS_ALLREDUCE_NANCHECK: 1: a non-finite reduced gradient raises an error naming the parameters. Allowed: 0 or 1. Since 1.5.0. */
#define PERSEUS_ENV_ALLREDUCE_NANCHECK "PERSEUS_ALLREDUCE_NANCHECK"
#define PERSEUS_ENV_ALIAS_ALLREDUCE_NANHECK "PERSEUS_ALLREDUCE_NANHECK"
#define PERSEUS_DEFAULT_ALLREDUCE_NANCHECK 0
#define PERSEUS_MIN_ALLREDUCE_NANCHECK 0
#define PERSEUS_MAX_ALLREDUCE_NANCHECK 1
#define PERSEUS_ACCEPTS_ALLREDUCE_NANCHECK "0 (off) or 1 (on)"

/* PERSEUS_ALLREDUCE_DTYPE: wire dtype of fp32 gradients. Allowed: 0, 1 or 2. Since 1.5.0. */
#define PERSEUS_ENV_ALLREDUCE_DTYPE "PERSEUS_ALLREDUCE_DTYPE"
#define PERSEUS_DEFAULT_ALLREDUCE_DTYPE 0
#define PERSEUS_MIN_ALLREDUCE_DTYPE 0
#define PERSEUS_MAX_ALLREDUCE_DTYPE 2
#define PERSEUS_ACCEPTS_ALLREDUCE_DTYPE "0 (fp16 compression), 1 (no compression) or 2 (fp32 inside a node, fp16 between nodes)"

/* PERSEUS_ALLREDUCE_MODE: one-level or two-level allreduce across nodes. Allowed: 0 or 1 (empty: automatic). Since 1.5.0. */
#define PERSEUS_ENV_ALLREDUCE_MODE "PERSEUS_ALLREDUCE_MODE"
#define PERSEUS_MIN_ALLREDUCE_MODE 0
#define PERSEUS_MAX_ALLREDUCE_MODE 1
#define PERSEUS_ACCEPTS_ALLREDUCE_MODE "0 (one-level allreduce) or 1 (two levels: inside the node, then among node leaders)"

/* PERSEUS_ALLREDUCE_STREAMS: number of communicators that carry fused buffers concurrently; unset, 4 is an upper limit and the first large steps measure 1 against 4 and keep the fewest unless more are 3% faster (all ranks agree). Allowed: 1-12. Since 1.5.0. */
#define PERSEUS_ENV_ALLREDUCE_STREAMS "PERSEUS_ALLREDUCE_STREAMS"
#define PERSEUS_DEFAULT_ALLREDUCE_STREAMS 4
#define PERSEUS_MIN_ALLREDUCE_STREAMS 1
#define PERSEUS_MAX_ALLREDUCE_STREAMS 12
#define PERSEUS_ACCEPTS_ALLREDUCE_STREAMS "an integer from 1 to 12"

/* PERSEUS_ALLREDUCE_FUSION: gradient fusion granularity handed to the fusion planner. Allowed: 0-128 (empty: automatic). Since 1.5.0. */
#define PERSEUS_ENV_ALLREDUCE_FUSION "PERSEUS_ALLREDUCE_FUSION"
#define PERSEUS_MIN_ALLREDUCE_FUSION 0
#define PERSEUS_MAX_ALLREDUCE_FUSION 128
#define PERSEUS_ACCEPTS_ALLREDUCE_FUSION "an integer from 0 to 128"

/* PERSEUS_ACCUMULATE_N_STEPS: communicate every n-th backward pass, accumulate locally otherwise. Allowed: >= 1. Since 1.5.0. */
#define PERSEUS_ENV_ACCUMULATE_N_STEPS "PERSEUS_ACCUMULATE_N_STEPS"
#define PERSEUS_DEFAULT_ACCUMULATE_N_STEPS 1
#define PERSEUS_MIN_ACCUMULATE_N_STEPS 1
#define PERSEUS_ACCEPTS_ACCUMULATE_N_STEPS "an integer >= 1"

/* PERSEUS_DOWNSAMPLE_N_ELEMENTS: send one element in n per step (gossip downsampling). Allowed: >= 1. Since 1.5.0. */
#define PERSEUS_ENV_DOWNSAMPLE_N_ELEMENTS "PERSEUS_DOWNSAMPLE_N_ELEMENTS"
#define PERSEUS_DEFAULT_DOWNSAMPLE_N_ELEMENTS 1
#define PERSEUS_MIN_DOWNSAMPLE_N_ELEMENTS 1
#define PERSEUS_ACCEPTS_DOWNSAMPLE_N_ELEMENTS "an integer >= 1"

/* PERSEUS_GRADIENT_MOMENTUM: decay of the not-yet-sent gradient residual under downsampling. Allowed: 0.0-1.0. Since 1.5.0. */
#define PERSEUS_ENV_GRADIENT_MOMENTUM "PERSEUS_GRADIENT_MOMENTUM"
#define PERSEUS_DEFAULT_GRADIENT_MOMENTUM 1.0
#define PERSEUS_MIN_GRADIENT_MOMENTUM 0.0
#define PERSEUS_MAX_GRADIENT_MOMENTUM 1.0
#define PERSEUS_ACCEPTS_GRADIENT_MOMENTUM "a number >= 0.0 and <= 1.0"

/* PERSEUS_NCCL_ENABLE: hybrid RDMA+VPC NCCL links (special build). Allowed: 0 or 1. Since 1.5.0. */
#define PERSEUS_ENV_NCCL_ENABLE "PERSEUS_NCCL_ENABLE"
#define PERSEUS_DEFAULT_NCCL_ENABLE 0
#define PERSEUS_MIN_NCCL_ENABLE 0
#define PERSEUS_MAX_NCCL_ENABLE 1
#define PERSEUS_ACCEPTS_NCCL_ENABLE "0 (off) or 1 (on)"

/* PERSEUS_ALLREDUCE_GRADIENT_SCALE: factor applied before fp16 compression and removed after. Allowed: > 0. Since 1.5.0. */
#define PERSEUS_ENV_ALLREDUCE_GRADIENT_SCALE "PERSEUS_ALLREDUCE_GRADIENT_SCALE"
#define PERSEUS_DEFAULT_ALLREDUCE_GRADIENT_SCALE 10.0
#define PERSEUS_MIN_ALLREDUCE_GRADIENT_SCALE 0.0
#define PERSEUS_ACCEPTS_ALLREDUCE_GRADIENT_SCALE "a number > 0.0"

/* PERSEUS_OFFLINE_NEG: 1: once two consecutive steps submit the same collectives, the native engine runs them from that agreed plan without negotiating each cycle; a rank that then leaves the plan fails every rank naming what differs. Allowed: 0 or 1. Since 1.5.0. */
#define PERSEUS_ENV_OFFLINE_NEG "PERSEUS_OFFLINE_NEG"
#define PERSEUS_DEFAULT_OFFLINE_NEG 0
#define PERSEUS_MIN_OFFLINE_NEG 0
#define PERSEUS_MAX_OFFLINE_NEG 1
#define PERSEUS_ACCEPTS_OFFLINE_NEG "0 (off) or 1 (on)"

/* PERSEUS_SHM_DISABLE: 1: a node's ranks exchange over loopback TCP, not shared memory (2 MiB of /dev/shm per rank and group; the engine falls back by itself without it). Allowed: 0 or 1. Since 2.0.0. */
#define PERSEUS_ENV_SHM_DISABLE "PERSEUS_SHM_DISABLE"
#define PERSEUS_DEFAULT_SHM_DISABLE 0
#define PERSEUS_MIN_SHM_DISABLE 0
#define PERSEUS_MAX_SHM_DISABLE 1
#define PERSEUS_ACCEPTS_SHM_DISABLE "0 (shared memory) or 1 (loopback TCP)"

/* PERSEUS_PERF_CHECK_N_STEPS: every n steps, compare step times across ranks and report slow ones (0: off). Allowed: >= 0. Since 1.5.0. */
#define PERSEUS_ENV_PERF_CHECK_N_STEPS "PERSEUS_PERF_CHECK_N_STEPS"
#define PERSEUS_DEFAULT_PERF_CHECK_N_STEPS 0
#define PERSEUS_MIN_PERF_CHECK_N_STEPS 0
#define PERSEUS_ACCEPTS_PERF_CHECK_N_STEPS "an integer >= 0"

/* PERSEUS_MASTER_PORT: port of the perseus rendezvous on MASTER_ADDR (must differ from MASTER_PORT). Allowed: 1-65535. Since 1.5.0. */
#define PERSEUS_ENV_MASTER_PORT "PERSEUS_MASTER_PORT"
#define PERSEUS_DEFAULT_MASTER_PORT 6666
#define PERSEUS_MIN_MASTER_PORT 1
#define PERSEUS_MAX_MASTER_PORT 65535
#define PERSEUS_ACCEPTS_MASTER_PORT "an integer from 1 to 65535"

/* PERSEUS_NCCL_NETWORK_INTERFACE: network interface of NCCL communicators (NCCL_SOCKET_IFNAME unless set; eth0 where it exists). Allowed: an interface of this machine. Since 1.5.0. */
#define PERSEUS_ENV_NCCL_NETWORK_INTERFACE "PERSEUS_NCCL_NETWORK_INTERFACE"
#define PERSEUS_DEFAULT_NCCL_NETWORK_INTERFACE "eth0"

/* PERSEUS_GLOO_NETWORK_INTERFACE: network interface of Gloo communicators (GLOO_SOCKET_IFNAME). Allowed: an interface of this machine. Since 1.5.0. */
#define PERSEUS_ENV_GLOO_NETWORK_INTERFACE "PERSEUS_GLOO_NETWORK_INTERFACE"
#define PERSEUS_DEFAULT_GLOO_NETWORK_INTERFACE "eth0"

/* GLOO_TIMEOUT_SECONDS: timeout of the process groups and rendezvous perseus creates. Allowed: >= 1. Since 1.5.0. */
#define PERSEUS_ENV_GLOO_TIMEOUT_SECONDS "GLOO_TIMEOUT_SECONDS"
#define PERSEUS_DEFAULT_GLOO_TIMEOUT_SECONDS 60
#define PERSEUS_MIN_GLOO_TIMEOUT_SECONDS 1
#define PERSEUS_ACCEPTS_GLOO_TIMEOUT_SECONDS "an integer >= 1"

/* PERSEUS_CHANGE_HVD_ALLGATHER: hvd.allgather: 0 stacks the ranks' tensors, 1 concatenates them (Horovod). Allowed: 0 or 1. Since 1.5.0. */
#define PERSEUS_ENV_CHANGE_HVD_ALLGATHER "PERSEUS_CHANGE_HVD_ALLGATHER"
#define PERSEUS_DEFAULT_CHANGE_HVD_ALLGATHER 0
#define PERSEUS_MIN_CHANGE_HVD_ALLGATHER 0
#define PERSEUS_MAX_CHANGE_HVD_ALLGATHER 1
#define PERSEUS_ACCEPTS_CHANGE_HVD_ALLGATHER "0 (stack) or 1 (concatenate)"

/* PERSEUS_USE_DDP_LAUNCHER: 1: hvd.init() joins the torch launcher's rendezvous; 0: perseus's own (mpirun). Allowed: 0 or 1. Since 1.5.0. */
#define PERSEUS_ENV_USE_DDP_LAUNCHER "PERSEUS_USE_DDP_LAUNCHER"
#define PERSEUS_DEFAULT_USE_DDP_LAUNCHER 1
#define PERSEUS_MIN_USE_DDP_LAUNCHER 0
#define PERSEUS_MAX_USE_DDP_LAUNCHER 1
#define PERSEUS_ACCEPTS_USE_DDP_LAUNCHER "0 (mpirun/perseusrun) or 1 (torch launcher)"

/* PERSEUS_CPU_DISPATCH: CPU kernels of compression: auto (the best this CPU runs) or one path. Allowed: auto | scalar | avx2 | avx512 | avx512_bf16. Since 2.0.0. */
#define PERSEUS_ENV_CPU_DISPATCH "PERSEUS_CPU_DISPATCH"
#define PERSEUS_DEFAULT_CPU_DISPATCH "auto"
#define PERSEUS_ACCEPTS_CPU_DISPATCH "auto | scalar | avx2 | avx512 | avx512_bf16"

/* PERSEUS_CYCLE_TIME_MS: how often the native engine's ranks agree on the collectives submitted since the last cycle (ms). Allowed: > 0. Since 2.0.0. */
#define PERSEUS_ENV_CYCLE_TIME_MS "PERSEUS_CYCLE_TIME_MS"
#define PERSEUS_DEFAULT_CYCLE_TIME_MS 1.0
#define PERSEUS_MIN_CYCLE_TIME_MS 0.0
#define PERSEUS_ACCEPTS_CYCLE_TIME_MS "a number > 0.0"

/* PERSEUS_ENGINE_LIBRARY: the native engine library the Python handle loads instead of the packaged one. Allowed: the path of a libperseus_engine.so. Since 2.0.0. */
#define PERSEUS_ENV_ENGINE_LIBRARY "PERSEUS_ENGINE_LIBRARY"

/* PERSEUS_MPI_BOOTSTRAP_LIBRARY: the plugin through which the engine agrees rank 0's address under a plain mpirun. Allowed: the path of a libperseus_mpi_<mpi>.so. Since 2.0.0. */
#define PERSEUS_ENV_MPI_BOOTSTRAP_LIBRARY "PERSEUS_MPI_BOOTSTRAP_LIBRARY"

/* PERSEUS_NCCL_LIBRARY: the NCCL the engine loads for device buffers (docs/device.md); pip install nvidia-nccl-cu12 provides one. Allowed: the path of a libnccl.so.2. Since 2.0.0. */
#define PERSEUS_ENV_NCCL_LIBRARY "PERSEUS_NCCL_LIBRARY"

/* PERSEUS_CUDART_LIBRARY: the CUDA runtime the engine loads for device buffers (docs/device.md). Allowed: the path of a libcudart.so.12. Since 2.0.0. */
#define PERSEUS_ENV_CUDART_LIBRARY "PERSEUS_CUDART_LIBRARY"

/* PERSEUS_ENGINE_PROFILE: 1: each engine stream prints its pipeline stages' busy seconds on stderr at shutdown (perseus-engine-profile lines). Allowed: 0 or 1. Since 2.0.0. */
#define PERSEUS_ENV_ENGINE_PROFILE "PERSEUS_ENGINE_PROFILE"
#define PERSEUS_DEFAULT_ENGINE_PROFILE 0
#define PERSEUS_MIN_ENGINE_PROFILE 0
#define PERSEUS_MAX_ENGINE_PROFILE 1
#define PERSEUS_ACCEPTS_ENGINE_PROFILE "0 (off) or 1 (on)"

/* PERSEUS_CAFFE_RANK_WEIGHTS: caffe train: after training every rank writes its parameters to <prefix>.rank<N>.bin (replicas check). Allowed: a path prefix in a writable folder. Since 1.5.0. */
#define PERSEUS_ENV_CAFFE_RANK_WEIGHTS "PERSEUS_CAFFE_RANK_WEIGHTS"

/* Every alias of a variable, X(PERSEUS_ENV_<name>, PERSEUS_ENV_ALIAS_<alias>). */
#define PERSEUS_ENV_ALIASES(X) \
  X(PERSEUS_ENV_ALLREDUCE_NANCHECK, PERSEUS_ENV_ALIAS_ALLREDUCE_NANHECK)

/* The native engine's options that variables set (`engine=` in their declaration). The engine's options
 * struct has one field per row; perseus_engine_options_from_env() reads each variable (and its aliases),
 * perseus_engine_options_set() takes the field or the variable by name, with the same rule and message.
 * Unset: the declared default, else the engine's automatic choice (-1; "" for text). */
#define PERSEUS_ENGINE_TEXT_CAPACITY 256

/* X(field, variable, unset, minimum, maximum, accepts) */
#define PERSEUS_ENGINE_INT_OPTIONS(X) \
  X(nancheck, "PERSEUS_ALLREDUCE_NANCHECK", 0, 0, 1, "0 (off) or 1 (on)") \
  X(wire_dtype, "PERSEUS_ALLREDUCE_DTYPE", 0, 0, 2, "0 (fp16 compression), 1 (no compression) or 2 (fp32 inside a node, fp16 between nodes)") \
  X(mode, "PERSEUS_ALLREDUCE_MODE", -1, 0, 1, "0 (one-level allreduce) or 1 (two levels: inside the node, then among node leaders)") \
  X(streams, "PERSEUS_ALLREDUCE_STREAMS", 4, 1, 12, "an integer from 1 to 12") \
  X(fusion, "PERSEUS_ALLREDUCE_FUSION", -1, 0, 128, "an integer from 0 to 128") \
  X(offline_neg, "PERSEUS_OFFLINE_NEG", 0, 0, 1, "0 (off) or 1 (on)") \
  X(shm_disable, "PERSEUS_SHM_DISABLE", 0, 0, 1, "0 (shared memory) or 1 (loopback TCP)") \
  X(timeout_seconds, "GLOO_TIMEOUT_SECONDS", 60, 1, 2147483647, "an integer >= 1")

/* X(field, variable, unset, minimum, minimum_inclusive, maximum, accepts) */
#define PERSEUS_ENGINE_REAL_OPTIONS(X) \
  X(gradient_scale, "PERSEUS_ALLREDUCE_GRADIENT_SCALE", 10.0, 0.0, 0, HUGE_VAL, "a number > 0.0") \
  X(cycle_ms, "PERSEUS_CYCLE_TIME_MS", 1.0, 0.0, 0, HUGE_VAL, "a number > 0.0")

/* X(field, variable, accepts): free text, unset "" */
#define PERSEUS_ENGINE_TEXT_OPTIONS(X) \
  X(iface, "PERSEUS_GLOO_NETWORK_INTERFACE", "an interface of this machine")

#endif  // PERSEUS_VARIABLES_H_
