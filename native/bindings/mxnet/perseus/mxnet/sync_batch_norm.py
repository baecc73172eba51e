"""PerseusSyncBatchNorm: BatchNorm whose batch statistics are those of the batches of several processes.

`import perseus.mxnet` installs it as `mx.gluon.contrib.nn.PerseusSyncBatchNorm` (the seed's name), with the
arguments of MXNet's `mx.gluon.contrib.nn.SyncBatchNorm` plus `comm_scope`:
  - comm_scope=0 (default, the manual's local mode): the statistics of the batches of the ranks on this node
    (engine's node numbering);
  - comm_scope=1 (global): the statistics of every rank's batch (one BatchNorm over the global batch).

The per-channel sums are computed here in float64 and exchanged with the engine's allgather (exact: no
fp16 wire, and every rank adds the same rows in the same order, so the ranks of a scope get bit-identical
statistics); the ranks' batch sizes may differ. Training forward: output with the scope's mean and biased
variance, moving statistics updated with them (as BatchNorm does). Backward: the input gradient of one
BatchNorm over the scope's concatenated batch (a second exchange of sum(dy) and sum(dy * x_hat));
gamma and beta get this rank's part of their gradient, which the trainer sums or averages over the ranks
as it does for every other parameter. Inference or use_global_stats: the moving statistics, no exchange.

It is an MXNet custom operator (mx.operator.CustomOp), so it also runs inside a hybridized network, on
any context (the statistics travel through the host). num_devices is accepted for compatibility and
unused: perseus runs one device per process.
"""
from typing import Any, List

import mxnet as mx
import numpy as np

from . import _world

OP_TYPE = "perseus_sync_batch_norm"
COMM_SCOPES = (0, 1)


def _scope_sum(rows, name, comm_scope):
    # type: (np.ndarray, str, int) -> np.ndarray
    """Sum of the float64 rows [node, ...] of the ranks in this rank's scope, identical on each of them."""
    data, _ = _world.engine().allgather(name, rows.reshape(1, -1), dtype="float64")
    gathered = np.frombuffer(bytes(data), dtype=np.float64).reshape(-1, rows.size)
    if comm_scope == 0:
        gathered = gathered[gathered[:, 0] == rows[0]]
    total = np.zeros(rows.size - 1)
    for row in gathered:  # in rank order on every rank: the same rounding everywhere
        total += row[1:]
    return total


def _channels_last(array):
    # type: (np.ndarray) -> np.ndarray
    """(N, C, ...) -> (N * ..., C) float64, the per-channel samples as rows."""
    return np.moveaxis(array.astype(np.float64), 1, -1).reshape(-1, array.shape[1])


def _per_channel(values, like):
    # type: (np.ndarray, np.ndarray) -> np.ndarray
    return values.reshape((1, -1) + (1,) * (like.ndim - 2))


class _SyncBatchNormOp(mx.operator.CustomOp):
    def __init__(self, eps, momentum, fix_gamma, use_global_stats, comm_scope, key):
        # type: (float, float, bool, bool, int, str) -> None
        super(_SyncBatchNormOp, self).__init__()
        self.eps, self.momentum, self.fix_gamma = eps, momentum, fix_gamma
        self.use_global_stats, self.comm_scope, self.key = use_global_stats, comm_scope, key

    def _node(self):
        # type: () -> float
        return float(_world.cross_rank())

    def forward(self, is_train, req, in_data, out_data, aux):
        # type: (bool, List[str], List[Any], List[Any], List[Any]) -> None
        x = in_data[0].asnumpy()
        gamma = np.ones(x.shape[1]) if self.fix_gamma else in_data[1].asnumpy().astype(np.float64)
        beta = in_data[2].asnumpy().astype(np.float64)
        if is_train and not self.use_global_stats:
            samples = _channels_last(x)
            rows = np.concatenate([[self._node(), samples.shape[0]], samples.sum(axis=0), (samples ** 2).sum(axis=0)])
            total = _scope_sum(rows, "syncbn.%s.forward" % self.key, self.comm_scope)
            count, channels = total[0], x.shape[1]
            mean = total[1:1 + channels] / count
            var = np.maximum(total[1 + channels:] / count - mean ** 2, 0.0)
            m = self.momentum
            aux[0][:] = m * aux[0].asnumpy() + (1 - m) * mean
            aux[1][:] = m * aux[1].asnumpy() + (1 - m) * var
        else:
            mean = aux[0].asnumpy().astype(np.float64)
            var = aux[1].asnumpy().astype(np.float64)
        invstd = 1.0 / np.sqrt(var + self.eps)
        y = (x - _per_channel(mean, x)) * _per_channel(invstd * gamma, x) + _per_channel(beta, x)
        self.assign(out_data[0], req[0], mx.nd.array(y.astype(x.dtype), dtype=x.dtype))
        self.assign(out_data[1], req[1], mx.nd.array(mean, dtype=x.dtype))
        self.assign(out_data[2], req[2], mx.nd.array(invstd, dtype=x.dtype))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        # type: (List[str], List[Any], List[Any], List[Any], List[Any], List[Any]) -> None
        dy, x = out_grad[0].asnumpy().astype(np.float64), in_data[0].asnumpy()
        gamma = np.ones(x.shape[1]) if self.fix_gamma else in_data[1].asnumpy().astype(np.float64)
        mean, invstd = out_data[1].asnumpy().astype(np.float64), out_data[2].asnumpy().astype(np.float64)
        x_hat = (x.astype(np.float64) - _per_channel(mean, x)) * _per_channel(invstd, x)
        dy_rows, dyx_rows = _channels_last(dy), _channels_last(dy * x_hat)
        local_dbeta, local_dgamma = dy_rows.sum(axis=0), dyx_rows.sum(axis=0)
        if self.use_global_stats:
            dx = dy * _per_channel(gamma * invstd, x)
        else:
            rows = np.concatenate([[self._node(), dy_rows.shape[0]], local_dbeta, local_dgamma])
            total = _scope_sum(rows, "syncbn.%s.backward" % self.key, self.comm_scope)
            count, channels = total[0], x.shape[1]
            sum_dy, sum_dyx = total[1:1 + channels], total[1 + channels:]
            dx = _per_channel(gamma * invstd, x) * (
                dy - (_per_channel(sum_dy, x) + x_hat * _per_channel(sum_dyx, x)) / count)
        self.assign(in_grad[0], req[0], mx.nd.array(dx.astype(x.dtype), dtype=x.dtype))
        self.assign(in_grad[1], req[1], mx.nd.array(np.zeros_like(local_dgamma) if self.fix_gamma else local_dgamma,
                                                    dtype=x.dtype))
        self.assign(in_grad[2], req[2], mx.nd.array(local_dbeta, dtype=x.dtype))


@mx.operator.register(OP_TYPE)
class _SyncBatchNormProp(mx.operator.CustomOpProp):
    def __init__(self, eps="1e-5", momentum="0.9", fix_gamma="False", use_global_stats="False", comm_scope="0",
                 key=""):
        # type: (str, str, str, str, str, str) -> None
        super(_SyncBatchNormProp, self).__init__(need_top_grad=True)
        self.args = (float(eps), float(momentum), fix_gamma == "True", use_global_stats == "True",
                     int(comm_scope), key)

    def list_arguments(self):
        # type: () -> List[str]
        return ["data", "gamma", "beta"]

    def list_outputs(self):
        # type: () -> List[str]
        return ["output", "mean", "invstd"]

    def list_auxiliary_states(self):
        # type: () -> List[str]
        return ["moving_mean", "moving_var"]

    def infer_shape(self, in_shape):
        # type: (List[List[int]]) -> Any
        data = in_shape[0]
        if len(data) < 2:
            raise ValueError("PerseusSyncBatchNorm: the input needs a batch and a channel axis (N, C, ...), "
                             "got shape %s" % (tuple(data),))
        channel = [data[1]]
        return [data, channel, channel], [data, channel, channel], [channel, channel]

    def infer_type(self, in_type):
        # type: (List[Any]) -> Any
        dtype = in_type[0]
        return [dtype] * 3, [dtype] * 3, [dtype] * 2

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        # type: (List[int], List[int], List[int]) -> List[int]
        return [out_grad[0], in_data[0], in_data[1], out_data[1], out_data[2]]

    def create_operator(self, ctx, in_shapes, in_dtypes):
        # type: (Any, Any, Any) -> _SyncBatchNormOp
        return _SyncBatchNormOp(*self.args)


class PerseusSyncBatchNorm(mx.gluon.nn.BatchNorm):
    """mx.gluon.contrib.nn.SyncBatchNorm's arguments, plus comm_scope (0: this node's ranks, 1: all ranks)."""

    def __init__(self, in_channels=0, num_devices=None, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones", comm_scope=0, **kwargs):
        # type: (int, Any, float, float, bool, bool, bool, Any, Any, Any, Any, int, Any) -> None
        if comm_scope not in COMM_SCOPES:
            raise ValueError("PerseusSyncBatchNorm: comm_scope=%r; it is 0 (statistics of the ranks on this node) "
                             "or 1 (statistics of all ranks)" % (comm_scope,))
        super(PerseusSyncBatchNorm, self).__init__(
            1, momentum, epsilon, center, scale, use_global_stats, beta_initializer, gamma_initializer,
            running_mean_initializer, running_variance_initializer, in_channels, **kwargs)
        self._sync_kwargs = {"eps": str(epsilon), "momentum": str(momentum), "fix_gamma": str(not scale),
                             "use_global_stats": str(use_global_stats), "comm_scope": str(comm_scope),
                             "key": self.prefix}

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        # type: (Any, Any, Any, Any, Any, Any) -> Any
        return F.Custom(x, gamma, beta, running_mean, running_var, op_type=OP_TYPE, name="fwd",
                        **self._sync_kwargs)[0]

    def __repr__(self):
        # type: () -> str
        return "PerseusSyncBatchNorm(comm_scope=%s, %s)" % (self._sync_kwargs["comm_scope"],
                                                           super(PerseusSyncBatchNorm, self).__repr__())


def install():
    # type: () -> None
    """mx.gluon.contrib.nn.PerseusSyncBatchNorm: this custom-operator block, unless the running libmxnet was built
    with perseus-mxnet-sync-bn.patch (its own operator and block, which exchange through the same engine)."""
    if hasattr(mx.nd.contrib, "PerseusSyncBatchNorm") and hasattr(mx.gluon.contrib.nn, "PerseusSyncBatchNorm"):
        return
    mx.gluon.contrib.nn.PerseusSyncBatchNorm = PerseusSyncBatchNorm
