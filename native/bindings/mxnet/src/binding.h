/* The C ABI of _perseus_mxnet.so beyond the engine's (perseus/engine.h, also exported by it): the build
 * manifest, the MXNet headers' version, and the core's compression on host buffers (NDArray data
 * pointers handed over by perseus/mxnet/_native.py). Loaded with ctypes; no Python C API. */
#ifndef PERSEUS_MXNET_BINDING_H
#define PERSEUS_MXNET_BINDING_H
#include <stdint.h>

#include "perseus/engine.h"

#define PERSEUS_MXNET_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

PERSEUS_MXNET_API const char* perseus_mxnet_build_manifest(void);
/* MXNET_VERSION of the headers compiled against (10901 for 1.9.1). */
PERSEUS_MXNET_API int perseus_mxnet_header_version(void);
PERSEUS_MXNET_API const char* perseus_mxnet_core_version(void);
PERSEUS_MXNET_API const char* perseus_mxnet_dispatch(void);
PERSEUS_MXNET_API const char* perseus_mxnet_last_error(void);
/* The engine perseus.mxnet.init() created (NULL before init and after shutdown): what the operator of
 * perseus-mxnet-sync-bn.patch (_contrib_PerseusSyncBatchNorm, in a patched libmxnet) exchanges through. */
PERSEUS_MXNET_API void perseus_mxnet_set_engine(perseus_engine* engine);
PERSEUS_MXNET_API perseus_engine* perseus_mxnet_engine(void);
/* dtype: MXNet's type flag of dst (mshadow kFloat16); 0 on success, else a core status. */
PERSEUS_MXNET_API int perseus_mxnet_compress(const float* src, void* dst, int dst_type_flag, uint64_t n,
                                             float scale, uint64_t* nonfinite);
PERSEUS_MXNET_API int perseus_mxnet_decompress(const void* src, int src_type_flag, float* dst, uint64_t n,
                                               float scale, int64_t world_size, uint64_t* nonfinite);

#ifdef __cplusplus
}
#endif
#endif
