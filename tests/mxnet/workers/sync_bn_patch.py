"""The operator of perseus-mxnet-sync-bn.patch in a job: python sync_bn_patch.py DRIVER.so SCOPE.

DRIVER.so (tests/mxnet/native/sync_bn_driver.cc, compiled by the test against the patch's files) runs the
operator's CPU Forward / Backward and its exchange through the engine perseus.mxnet.init() made. Rank r
holds the rows of sync_bn.py's global batch (batch sizes 3 + 2 r); the reference is MXNet's own BatchNorm
over the concatenated batch of the scope. Prints one `REPORT {json}` line.
"""
import ctypes
import json
import sys

import numpy as np

import sync_bn  # the sibling worker: the same data, rows and reference as the Gluon block's test
import perseus.mxnet as hvd

GAMMA = np.array([0.5, 1.0, 1.5, 2.0], dtype=np.float32)
BETA = np.array([0.1, -0.2, 0.3, -0.4], dtype=np.float32)
EPS, MOMENTUM = 1e-5, 0.8  # gluon.nn.BatchNorm's epsilon, the momentum sync_bn.py's reference uses


def pointer(array):
    return array.ctypes.data_as(ctypes.POINTER(ctypes.c_float))


class Driver(object):
    def __init__(self, path, scope):
        self.lib = ctypes.CDLL(path)
        self.lib.psbn_last_error.restype = ctypes.c_char_p
        self.scope = scope

    def _call(self, fn, is_train, key, x, arrays):
        n, c = x.shape[0], x.shape[1]
        rest = int(np.prod(x.shape[2:]))
        args = [ctypes.c_int(is_train), ctypes.c_float(EPS), ctypes.c_float(MOMENTUM), ctypes.c_int(0),
                ctypes.c_int(0), ctypes.c_int(self.scope), key.encode(), n, c, rest]
        if fn(*(args + [pointer(a) for a in arrays])) != 0:
            raise RuntimeError(self.lib.psbn_last_error().decode())

    def forward(self, is_train, key, x, moving_mean, moving_var):
        y, mean, invstd = np.empty_like(x), np.empty(x.shape[1], np.float32), np.empty(x.shape[1], np.float32)
        self._call(self.lib.psbn_forward, is_train, key, x, [x, GAMMA, BETA, moving_mean, moving_var, y, mean, invstd])
        return y, mean, invstd

    def backward(self, key, dy, x, mean, invstd):
        dx, dgamma, dbeta = np.empty_like(x), np.empty(x.shape[1], np.float32), np.empty(x.shape[1], np.float32)
        self._call(self.lib.psbn_backward, 1, key, x, [dy, x, GAMMA, mean, invstd, dx, dgamma, dbeta])
        return dx, dgamma, dbeta


def main():
    driver = Driver(sys.argv[1], int(sys.argv[2]))
    x_one = np.ones((2, 4, 3), np.float32)
    try:  # before init: the operator names the fix
        driver.forward(1, "bn", x_one, np.zeros(4, np.float32), np.ones(4, np.float32))
        before_init = "no error"
    except RuntimeError as error:
        before_init = str(error)
    hvd.init()
    rank, size, node = hvd.rank(), hvd.size(), hvd.cross_rank()
    x_all, head_all = sync_bn.global_data(size)
    mine = sync_bn.rows_of([rank], size)
    x, head = np.ascontiguousarray(x_all[mine]), np.ascontiguousarray(head_all[mine])
    moving_mean, moving_var = np.zeros(4, np.float32), np.ones(4, np.float32)
    for _ in range(2):  # two steps, as sync_bn.run does
        y, mean, invstd = driver.forward(1, "bn", x, moving_mean, moving_var)
        dx, dgamma, dbeta = driver.backward("bn", head, x, mean, invstd)
    inference, _, _ = driver.forward(0, "bn", x, moving_mean, moving_var)
    scope_ranks = list(range(size)) if driver.scope == 1 else [r for r in range(size) if r // hvd.local_size() == node]
    rows = sync_bn.rows_of(scope_ranks, size)
    ref = sync_bn.run(sync_bn.mx.gluon.nn.BatchNorm(in_channels=4, momentum=MOMENTUM), x_all[rows], head_all[rows],
                      False)
    where = [list(rows).index(i) for i in mine]
    report = {"rank": rank, "node": node, "batch": len(mine), "before_init": before_init,
              "native": {"out": y.tolist(), "grad": dx.tolist(), "moving_mean": moving_mean.tolist(),
                         "moving_var": moving_var.tolist(), "dgamma": dgamma.tolist(), "dbeta": dbeta.tolist(),
                         "inference": inference.tolist()},
              "reference": {"out": np.array(ref["out"])[where].tolist(), "grad": np.array(ref["grad"])[where].tolist(),
                            "moving_mean": ref["moving_mean"], "moving_var": ref["moving_var"],
                            "dgamma": ref["dgamma"], "dbeta": ref["dbeta"],
                            "inference": np.array(ref["inference"])[where].tolist()}}
    print("REPORT " + json.dumps(report), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
