"""hvd.DistributedOptimizer(backward_passes_per_step=2) under model.fit, Keras 3 and Keras 2 (tf_keras with
TF_USE_LEGACY_KERAS=1), in 2-rank perseusrun jobs: the gradients of two steps are added on each rank, allreduced
and applied every second step (divided by 2 with average_aggregated_gradients), nothing is applied between, and
the optimizer still counts every step, as Horovod's optimizer does."""
from pathlib import Path

import numpy as np
import pytest

from test_tf_horovod_runs import run_job

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

WORKER = Path(__file__).resolve().parent / "workers" / "tf_aggregation.py"
AVERAGE_GRADIENT = (np.array([1.0, 2.0]) + np.array([3.0, 0.5])) / 2  # the ranks' per-step gradients, averaged


def expected_kernels(average: bool):
    applied = 2 * AVERAGE_GRADIENT / (2 if average else 1)  # two steps' sum, allreduced (and averaged over them)
    zero = np.zeros(2)
    return [zero, -applied, -applied, -2 * applied]  # SGD(learning_rate=1): only steps 2 and 4 apply


@pytest.mark.parametrize("keras", ["keras3", "keras2"])
def test_two_backward_passes_per_step(ops, keras):
    reports = run_job("aggregation", {"TF_USE_LEGACY_KERAS": "1"} if keras == "keras2" else {}, worker=WORKER)
    for r in reports:
        assert r["keras"].split(".")[0] == ("tf_keras" if keras == "keras2" else "keras"), r["keras"]
        for label, average in (("sum", False), ("average", True)):
            got = r[label]
            assert np.allclose(got["kernels"], expected_kernels(average), rtol=1e-3, atol=1e-3), (label, got)
            assert (got["iterations"], got["counter"]) == (4, 0), (label, got)
