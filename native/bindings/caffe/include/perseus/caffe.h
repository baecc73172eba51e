/* perseus/caffe.h: libperseus-caffe, AIACC-Training (Perseus) for BVLC Caffe.
 *
 * The library is the Perseus engine (its C ABI, perseus/engine.h, is exported too) plus this thin
 * Caffe-facing layer, called by the solver callback of 1_perseus_distribute_train.patch
 * (src/caffe/perseus.cpp): join the job, broadcast rank 0's weights, average the learnable parameters'
 * diffs between Backward and Update. The wire policy is the engine's, from the environment:
 * PERSEUS_ALLREDUCE_DTYPE (0: fp16 on the wire, the default), _MODE, _GRADIENT_SCALE, _STREAMS, _FUSION
 * (the diffs of one step are submitted together and fused), _NANCHECK, PERSEUS_CYCLE_TIME_MS,
 * GLOO_TIMEOUT_SECONDS, PERSEUS_GLOO_NETWORK_INTERFACE.
 *
 * Every function returning int returns 0 on success and -1 on failure; perseus_caffe_last_error()
 * then names the problem and the fix. Not thread-safe: call from Caffe's solver thread.
 */
#ifndef PERSEUS_CAFFE_H
#define PERSEUS_CAFFE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define PERSEUS_CAFFE_API __attribute__((visibility("default")))
#else
#define PERSEUS_CAFFE_API
#endif

#define PERSEUS_CAFFE_ABI_VERSION 1

typedef enum perseus_caffe_dtype {
  PERSEUS_CAFFE_FLOAT32 = 0, /* Caffe's float nets: fp16 on the wire by default */
  PERSEUS_CAFFE_FLOAT64 = 1  /* double nets: fp64 on the wire */
} perseus_caffe_dtype;

PERSEUS_CAFFE_API int perseus_caffe_abi_version(void);

/* Joins the job this process was started in: a plain mpirun (no MASTER_ADDR: rank 0's address and a
 * port agreed through MPI by the bootstrap plugin beside this library), perseusrun / torchrun variables
 * (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR; the store on
 * PERSEUS_MASTER_PORT, default 6666), Open MPI / MPICH variables with MASTER_ADDR set; no launcher: one
 * process. Blocks until every rank joined (GLOO_TIMEOUT_SECONDS). A second call does nothing. */
PERSEUS_CAFFE_API int perseus_caffe_init(void);
PERSEUS_CAFFE_API int perseus_caffe_rank(void);
PERSEUS_CAFFE_API int perseus_caffe_size(void);
PERSEUS_CAFFE_API int perseus_caffe_local_rank(void);
PERSEUS_CAFFE_API int perseus_caffe_local_size(void);
/* One line for the log: who this rank is, the launcher, the wire (fp16 or fp32), fusion, NaN check. */
PERSEUS_CAFFE_API const char* perseus_caffe_describe(void);

/* In place: root's buffers[i] (counts[i] values of dtype) are copied into every rank's. */
PERSEUS_CAFFE_API int perseus_caffe_broadcast(void* const* buffers, const int64_t* counts, int n,
                                              perseus_caffe_dtype dtype, int root);
/* In place: buffers[i] becomes the average of the ranks' buffers[i]. The n buffers are submitted together
 * (the engine fuses them) and all are done when this returns. */
PERSEUS_CAFFE_API int perseus_caffe_allreduce_average(void* const* buffers, const int64_t* counts, int n,
                                                      perseus_caffe_dtype dtype);
/* The engine's counters (collectives, fused groups, fp16 on the wire); NULL before init or in a
 * one-process job. The pointer is valid until the next call. */
struct perseus_engine_info;
PERSEUS_CAFFE_API const struct perseus_engine_info* perseus_caffe_engine_info(void);
/* Leaves the job (every rank calls it at the end of training). */
PERSEUS_CAFFE_API int perseus_caffe_finalize(void);
PERSEUS_CAFFE_API const char* perseus_caffe_last_error(void);

#ifdef __cplusplus
}
#endif
#endif /* PERSEUS_CAFFE_H */
