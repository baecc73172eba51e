"""Keras 2 (tf_keras with TF_USE_LEGACY_KERAS=1 on TensorFlow 2.21) in 2-process perseusrun jobs:
model.fit with hvd.keras.DistributedOptimizer and the three callbacks, as the Keras 3 test runs it.
Ranks start from different weights and end with identical variables and optimizer state; the loss
goes down; the engine's byte counters show the gradients' wire dtype."""
import importlib.util
import shutil

import pytest

from test_tf_horovod_runs import check_collectives, check_fit_wire, run_job

LEGACY = {"TF_USE_LEGACY_KERAS": "1"}

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("ops"),
              pytest.mark.skipif(importlib.util.find_spec("tf_keras") is None,
                                 reason="tf_keras is installed by the dev/test.sh stage tensorflow-binding")]


def check_keras2_fit(reports, optimizer_module):
    check_collectives(reports)
    assert reports[0]["after"] == reports[1]["after"]  # weights and optimizer state
    assert reports[0]["losses"] == reports[1]["losses"]  # MetricAverageCallback: averaged logs
    losses = reports[0]["losses"]
    assert losses[-1] < 0.6 * losses[0], losses
    for r in reports:
        assert r["keras_major"] == 2 and r["optimizer_class"] == "Adam", r
        assert r["optimizer_module"].startswith(optimizer_module), r["optimizer_module"]


def test_keras2_fit_fp16_on_the_wire_by_default():
    reports = run_job("keras", LEGACY)
    check_keras2_fit(reports, "tf_keras.src.optimizers.adam")
    check_fit_wire(reports, fp16=True)


def test_keras2_fit_with_a_legacy_optimizer_dtype_1_sends_fp32():
    reports = run_job("keras", {**LEGACY, "PERSEUS_ALLREDUCE_DTYPE": "1"}, args=["legacy"])
    check_keras2_fit(reports, "tf_keras.src.optimizers.legacy")
    check_fit_wire(reports, fp16=False)


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun (apt-get install openmpi-bin)")
def test_keras2_fit_under_perseusrun_mpi():
    reports = run_job("keras", LEGACY, mpi=True)
    check_keras2_fit(reports, "tf_keras.src.optimizers.adam")
    check_fit_wire(reports, fp16=True)
