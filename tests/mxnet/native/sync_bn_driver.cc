// Test driver (ours, not part of the patch): runs the CPU Forward / Backward of perseus-mxnet-sync-bn.patch's
// _contrib_PerseusSyncBatchNorm (perseus_sync_batch_norm-inl.h) and its exchange (perseus_sync_batch_norm_comm.cc)
// on host buffers, with temp space from the running libmxnet's ResourceManager. Loaded with ctypes into a
// process that imported mxnet and perseus.mxnet: the operator's own registration cannot be loaded into the
// pip libmxnet (built with a GCC 4.8 libstdc++ whose std::function passes arguments by value), so the
// kernels and the exchange are driven directly; the registration is compiled (tests/mxnet).
#include "src/operator/contrib/perseus_sync_batch_norm-inl.h"

#include <mxnet/resource.h>

#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace {
using mxnet::TBlob;
using mxnet::TShape;
using mxnet::op::PerseusSyncBatchNormParam;

thread_local std::string g_error;

TShape Data(int n, int c, int rest) { return TShape{n, c, rest}; }
TShape Channel(int c) { return TShape{c}; }
TBlob Blob(const float* p, const TShape& s) { return TBlob(const_cast<float*>(p), s, mshadow::cpu::kDevMask); }

mxnet::OpContext Context(bool is_train) {
  static mshadow::Stream<mshadow::cpu> stream;
  mxnet::OpContext ctx;
  ctx.is_train = is_train;
  ctx.need_grad = is_train;
  ctx.run_ctx.ctx = mxnet::Context::CPU();
  ctx.run_ctx.stream = &stream;
  ctx.requested.push_back(mxnet::ResourceManager::Get()->Request(
      mxnet::Context::CPU(), mxnet::ResourceRequest(mxnet::ResourceRequest::kTempSpace)));
  return ctx;
}

PerseusSyncBatchNormParam Param(float eps, float momentum, int fix_gamma, int use_global_stats, int comm_scope,
                                const char* key) {
  PerseusSyncBatchNormParam p;
  p.eps = eps;
  p.momentum = momentum;
  p.fix_gamma = fix_gamma != 0;
  p.use_global_stats = use_global_stats != 0;
  p.output_mean_var = false;
  p.ndev = 1;
  p.key = key;
  p.comm_scope = comm_scope;
  return p;
}

template <typename Fn>
int Guard(Fn fn) {
  try {
    fn();
    return 0;
  } catch (const std::exception& e) {
    g_error = e.what();
    return 1;
  }
}
}  // namespace

extern "C" {
const char* psbn_last_error(void) { return g_error.c_str(); }

int psbn_forward(int is_train, float eps, float momentum, int fix_gamma, int use_global_stats, int comm_scope,
                 const char* key, int n, int c, int rest, const float* x, const float* gamma, const float* beta,
                 float* moving_mean, float* moving_var, float* y, float* mean, float* invstd) {
  return Guard([&] {
    const PerseusSyncBatchNormParam p = Param(eps, momentum, fix_gamma, use_global_stats, comm_scope, key);
    const std::vector<TBlob> in = {Blob(x, Data(n, c, rest)), Blob(gamma, Channel(c)), Blob(beta, Channel(c)),
                                   Blob(moving_mean, Channel(c)), Blob(moving_var, Channel(c))};
    const std::vector<TBlob> out = {Blob(y, Data(n, c, rest)), Blob(mean, Channel(c)), Blob(invstd, Channel(c))};
    const std::vector<mxnet::OpReqType> req(3, mxnet::kWriteTo);
    mxnet::op::perseus_sbn::Forward<mshadow::cpu, float>(p, Context(is_train != 0), in, req, out,
                                                          std::string("perseus_sync_bn.") + key);
  });
}

int psbn_backward(int is_train, float eps, float momentum, int fix_gamma, int use_global_stats, int comm_scope,
                  const char* key, int n, int c, int rest, const float* dy, const float* x, const float* gamma,
                  const float* mean, const float* invstd, float* dx, float* dgamma, float* dbeta) {
  return Guard([&] {
    const PerseusSyncBatchNormParam p = Param(eps, momentum, fix_gamma, use_global_stats, comm_scope, key);
    const std::vector<TBlob> in = {Blob(dy, Data(n, c, rest)), Blob(x, Data(n, c, rest)), Blob(gamma, Channel(c)),
                                   Blob(mean, Channel(c)), Blob(invstd, Channel(c))};
    const std::vector<TBlob> out = {Blob(dx, Data(n, c, rest)), Blob(dgamma, Channel(c)), Blob(dbeta, Channel(c))};
    const std::vector<mxnet::OpReqType> req(3, mxnet::kWriteTo);
    mxnet::op::perseus_sbn::Backward<mshadow::cpu, float>(p, Context(is_train != 0), in, req, out,
                                                           std::string("perseus_sync_bn.") + key);
  });
}
}  // extern "C"
