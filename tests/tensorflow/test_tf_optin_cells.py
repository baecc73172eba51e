"""Opt-in (AIACC_OPTIN=1): perseus_tensorflow built against older TensorFlow and run on 2 ranks.

    AIACC_OPTIN=1 .venv/bin/python -m pytest tests/tensorflow/test_tf_optin_cells.py -x -q

- TensorFlow 2.14.1 (the matrix's CPU cell, Keras 2 and tf.estimator): the Keras 2 fit of the Keras 3 test
  (DistributedOptimizer + the three callbacks, fp16 on the wire by default, fp32 with DTYPE=1 under --mpi)
  and the Estimator example (BroadcastGlobalVariablesHook(0), DistributedOptimizer(AdamOptimizer)).
- TensorFlow 1.15 probe (CPython 3.6, pre-cxx11 ABI, C++14): the TF1 graph job of the worker and the
  TF1 Session example, both session kinds.
Every run: identical variables on both ranks after training, falling loss. Environments: optin_envs.py.
"""
import json
import shutil

import pytest

import optin_envs
from test_tf_examples import rank_results, run_example
from test_tf_horovod_runs import check_fit_wire, run_job


@pytest.fixture(scope="module")
def tf214():
    return str(optin_envs.tf214_python())


@pytest.fixture(scope="module")
def tf115():
    return str(optin_envs.tf115_python())


def manifest_of(python):
    program = ("import json, perseus.tensorflow._native as n; n.load(); print(json.dumps(n.build_manifest()))")
    return json.loads(optin_envs.run([python, "-c", program], env={**optin_envs.pip_env(), "TF_CPP_MIN_LOG_LEVEL": "3"})
                      .strip().splitlines()[-1])


def check_keras2_fit(reports, fp16):
    assert reports[0]["after"] == reports[1]["after"]  # weights and optimizer state
    assert reports[0]["losses"] == reports[1]["losses"]  # MetricAverageCallback
    losses = reports[0]["losses"]
    assert losses[-1] < 0.6 * losses[0], losses
    for r in reports:
        assert r["keras_major"] == 2 and r["optimizer_class"] == "Adam", r
        assert r["optimizer_module"].startswith("keras.src.optimizers"), r["optimizer_module"]  # keras 2.14
    check_fit_wire(reports, fp16=fp16)


@pytest.mark.optin("downloads tensorflow 2.14.1")
def test_tf214_binding_manifest(tf214):
    manifest = manifest_of(tf214)
    assert manifest["tensorflow_version"] == "2.14.1" and manifest["tensorflow_cuda"] is None
    assert manifest["cxx11_abi"] is True and manifest["cxx_standard"] == 17, manifest


@pytest.mark.optin("downloads tensorflow 2.14.1")
def test_tf214_keras2_fit_fp16_on_the_wire(tf214):
    check_keras2_fit(run_job("keras", python=tf214), fp16=True)


@pytest.mark.optin("downloads tensorflow 2.14.1")
@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun (apt-get install openmpi-bin)")
def test_tf214_keras2_fit_under_mpi_dtype_1(tf214):
    check_keras2_fit(run_job("keras", {"PERSEUS_ALLREDUCE_DTYPE": "1"}, mpi=True, python=tf214), fp16=False)


@pytest.mark.optin("downloads tensorflow 2.14.1")
def test_tf214_estimator_example(tf214, tmp_path):
    r0, r1 = rank_results(run_example("tensorflow_regression_estimator.py", "--steps", "150", "--model-dir", str(tmp_path),
                                      python=tf214))
    assert r0["variables"] == r1["variables"]  # rank 0's initial variables, then the same averaged updates
    assert any(name.endswith("/Adam") for name in r0["variable_names"]), r0["variable_names"]  # slots included
    for r in (r0, r1):
        assert r["steps"] == 150 and r["last_loss"] < 0.5 * r["first_loss"], r
    assert any(p.name.startswith("model.ckpt-150") for p in tmp_path.iterdir())  # rank 0's checkpoint


@pytest.mark.optin("downloads tensorflow-cpu 1.15 for Python 3.6 and builds the binding against it")
def test_tf115_binding_is_pre_cxx11_and_cxx14(tf115):
    manifest = manifest_of(tf115)
    assert manifest["tensorflow_version"] == "1.15.0" and manifest["release"] == "1.5.0"
    assert manifest["cxx11_abi"] is False and manifest["cxx_standard"] == 14, manifest


@pytest.mark.optin("downloads tensorflow-cpu 1.15 for Python 3.6 and builds the binding against it")
def test_tf115_tf1_graph_job(tf115):
    reports = run_job("tf1", python=tf115)
    assert reports[0]["before"] != reports[1]["before"]
    assert reports[0]["after"] == reports[1]["after"]  # variables and Adam's slots
    for r in reports:
        assert r["losses"][-1] < 0.5 * r["losses"][0], r["losses"]
        assert r["fp16_wire"] and r["collectives_issued"] > 30


@pytest.mark.optin("downloads tensorflow-cpu 1.15 for Python 3.6 and builds the binding against it")
@pytest.mark.parametrize("extra", [[], ["--plain-session"]], ids=["monitored-session", "plain-session"])
def test_tf115_session_example(tf115, extra):
    r0, r1 = rank_results(run_example("tensorflow_sess.py", "--steps", "150", *extra, python=tf115))
    assert r0["variables"] == r1["variables"]
    for r in (r0, r1):
        assert r["steps"] == 150 and r["last_loss"] < 0.5 * r["first_loss"], r
