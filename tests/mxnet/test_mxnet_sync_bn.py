"""PerseusSyncBatchNorm against MXNet's own BatchNorm over the concatenated batch: 2 ranks with different
data and batch sizes (global scope), and 2 nodes x 2 ranks (node scope: each node's ranks form one batch),
imperative and hybridized."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

REPO_ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "workers" / "sync_bn.py"
_helpers = importlib.util.spec_from_file_location("engine_helpers", REPO_ROOT / "tests" / "engine" / "engine_helpers.py")
helpers = importlib.util.module_from_spec(_helpers)
_helpers.loader.exec_module(helpers)  # type: ignore[union-attr]
PYTHONPATH = os.pathsep.join([str(REPO_ROOT / "native" / "runtime"), str(REPO_ROOT / "native" / "bindings" / "mxnet")])


def check_against_reference(reports, scope_of):
    for r in reports:
        ref = r["reference"]
        peers = [p for p in reports if scope_of(p) == scope_of(r)]
        for mode in ("imperative", "hybrid"):
            got = r[mode]
            for key in ("out", "grad", "inference"):
                np.testing.assert_allclose(got[key], ref[key], rtol=1e-4, atol=1e-5, err_msg="%s %s" % (mode, key))
            for key in ("moving_mean", "moving_var"):
                np.testing.assert_allclose(got[key], ref[key], rtol=1e-5, atol=1e-6, err_msg="%s %s" % (mode, key))
            for key in ("dgamma", "dbeta"):  # each rank's part; the trainer sums them over the ranks
                parts = np.sum([p[mode][key] for p in peers], axis=0)
                np.testing.assert_allclose(parts, ref[key], rtol=1e-4, atol=1e-4, err_msg="%s %s" % (mode, key))
    batches = [r["batch"] for r in reports]
    assert len(set(batches)) == len(batches)  # every rank had another batch size


def test_global_scope_two_ranks_is_one_batch_norm_over_both_batches(mxnet_python):
    master, perseus = helpers.free_ports(2)
    env = helpers.base_env("", {"MASTER_PORT": str(master), "PERSEUS_MASTER_PORT": str(perseus)})
    env.pop("PERSEUS_ENGINE_LIBRARY")
    env["PYTHONPATH"] = PYTHONPATH
    proc = subprocess.run([helpers.PERSEUSRUN, "-np", "2", "--", mxnet_python, str(WORKER), "1"], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    reports = helpers.reports(proc.stdout)
    assert [r["rank"] for r in reports] == [0, 1]
    for r in reports:  # a rank's own statistics would give other outputs: the exchange matters
        assert not np.allclose(r["imperative"]["out"], r["alone_out"], rtol=1e-3, atol=1e-3)
    check_against_reference(reports, lambda r: 0)


def run_two_nodes_of_two(mxnet_python, argv):
    """4 processes of `mxnet_python argv` started as torchrun starts 2 nodes x 2 ranks (GROUP_RANK = node);
    their (stdout, stderr), each asserted to have exited 0."""
    master, perseus = helpers.free_ports(2)
    procs = []
    for rank in range(4):
        env = helpers.base_env("", {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(master),
                                    "PERSEUS_MASTER_PORT": str(perseus), "RANK": str(rank), "WORLD_SIZE": "4",
                                    "LOCAL_RANK": str(rank % 2), "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": str(rank // 2)})
        env.pop("PERSEUS_ENGINE_LIBRARY")
        env["PYTHONPATH"] = PYTHONPATH
        procs.append(subprocess.Popen([mxnet_python] + list(argv), env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, universal_newlines=True))
    outputs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        assert p.returncode == 0, out[-2000:] + err[-3000:]
    return outputs


def test_node_scope_two_nodes_of_two_ranks(mxnet_python):
    """4 processes started as torchrun starts 2 nodes x 2 ranks (GROUP_RANK = node): comm_scope=0 gives each
    node the statistics of its own 2 ranks."""
    outputs = run_two_nodes_of_two(mxnet_python, [str(WORKER), "0"])
    reports = sorted((json.loads(out[out.index("REPORT ") + 7:].splitlines()[0]) for out, _ in outputs),
                     key=lambda r: r["rank"])
    assert [(r["rank"], r["node"]) for r in reports] == [(0, 0), (1, 0), (2, 1), (3, 1)]
    check_against_reference(reports, lambda r: r["node"])
    # the two nodes' statistics differ: each node normalised by its own
    assert not np.allclose(reports[0]["imperative"]["moving_mean"], reports[2]["imperative"]["moving_mean"])


def test_arguments_of_mxnet_sync_batch_norm_and_a_bad_scope(mxnet_python):
    code = ("import mxnet as mx, perseus.mxnet\n"
            "bn = mx.gluon.contrib.nn.PerseusSyncBatchNorm(in_channels=8, num_devices=1, momentum=0.8, epsilon=1e-3,\n"
            "    center=False, scale=False, use_global_stats=False, beta_initializer='zeros', gamma_initializer='ones',\n"
            "    running_mean_initializer='zeros', running_variance_initializer='ones', comm_scope=0)\n"
            "print('MADE', bn)\n"
            "try:\n    mx.gluon.contrib.nn.PerseusSyncBatchNorm(comm_scope=2)\n"
            "except ValueError as e:\n    print('REFUSED', e)\n")
    out = subprocess.run([mxnet_python, "-c", code], env=dict(os.environ, PYTHONPATH=PYTHONPATH),
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=120).stdout
    assert "MADE PerseusSyncBatchNorm(comm_scope=0" in out, out
    assert "REFUSED PerseusSyncBatchNorm: comm_scope=2; it is 0" in out, out
