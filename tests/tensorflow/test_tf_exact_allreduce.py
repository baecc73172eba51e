"""hvd.allreduce is exact for float32 and float64, as Horovod's is, while the gradient paths keep the engine's wire
policy: a 2-rank perseusrun job under the default PERSEUS_ALLREDUCE_DTYPE (fp32 gradients as fp16 on the wire)."""
from pathlib import Path

import numpy as np
import pytest

from test_tf_horovod_runs import run_job

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

WORKER = Path(__file__).resolve().parent / "workers" / "tf_exact.py"
VALUES = {0: [1.0001, 70000.0, 3.1415927, 1e-8, -2.5e-5, 0.1],
          1: [2.0003, 0.1, 65519.0, 1e-7, 123456.78, 1.0001]}
DOUBLES = {0: [1.0000000001, 70000.000000001], 1: [2.0000000003, 1e-12]}
GRADS = {0: [1.0001, 0.3, 2.7182817, -0.0123], 1: [2.0003, 0.1, 3.1415927, 0.0456]}


def f32(values):
    return np.asarray(values, dtype=np.float32)


@pytest.fixture(scope="module")
def reports(ops):
    return run_job("exact", worker=WORKER)


def test_public_allreduce_of_float32_and_float64_is_exact(reports):
    a, b = f32(VALUES[0]), f32(VALUES[1])
    exact_sum = a + b  # one fp32 rounding of the true sum, as Horovod's fp32 sum on two ranks
    for r in reports:
        assert r["fp16_policy"]  # the engine's wire policy is fp16: the public calls must not use it
        assert f32(r["sum"]).tolist() == exact_sum.tolist(), r["sum"]
        assert f32(r["average"]).tolist() == (exact_sum / np.float32(2)).tolist(), r["average"]
        assert f32(r["tf_function_sum"]).tolist() == exact_sum.tolist()
        assert [f32(g).tolist() for g in r["grouped"]] == [exact_sum.tolist(), (a * 3 + b * 3).tolist()]
        assert r["double_sum"] == (np.asarray(DOUBLES[0]) + np.asarray(DOUBLES[1])).tolist()
        assert r["public_fp16_bytes"] == 0  # nothing of it went over the wire as float16
    # reducescatter: rank r keeps row r of the exact sum
    for r in reports:
        assert f32(r["reducescatter"]).tolist() == [exact_sum.reshape(2, 3)[r["rank"]].tolist()]


def test_reducescatter_gradient_is_horovods(reports):
    """The gathered output gradients (rank 0 sent ones, rank 1 twos), times the size for Sum and the postscale;
    it came back as the allreduce's gradient before (ones everywhere, whatever the op)."""
    gathered = np.array([[1.0, 1.0], [1.0, 1.0], [2.0, 2.0], [2.0, 2.0]])
    for r in reports:
        grads = r["reducescatter_grads"]
        assert np.array_equal(grads["sum"], gathered * 2), grads
        assert np.array_equal(grads["average"], gathered), grads
        assert np.array_equal(grads["sum_postscale"], gathered * 2 * 0.25), grads


def test_gradient_predivide_factor_splits_the_average(reports):
    """Factor 2 on both ranks' gradient [5000, 1.5]: the average comes back (through the fp16 wire, where 2 x
    5000 x the gradient scale 10 would not fit undivided); op=Sum with a factor is Horovod's ValueError."""
    for r in reports:
        for got in (r["predivide_grad"], [-v for v in r["predivide_weight"]]):
            assert np.allclose(got, [5000.0, 1.5], rtol=2e-3), got
        assert all("gradient_predivide_factor not supported with op != Average" in m for m in r["predivide_refused"])


def test_gradient_paths_keep_the_fp16_wire(reports):
    exact_average = (f32(GRADS[0]) + f32(GRADS[1])) / np.float32(2)
    elements = len(GRADS[0])
    for r in reports:
        for key, got, sign in (("tape", r["tape_grad"], 1.0), ("keras", r["keras_weight"], -1.0)):
            assert r[key + "_fp16_bytes"] == 2 * elements, (key, r)  # fp16 on the wire: 2 bytes an element
            got = sign * f32(got)
            assert np.allclose(got, exact_average, rtol=2e-3, atol=1e-3), (key, got, exact_average)
            assert got.tolist() != exact_average.tolist(), (key, "fp16 rounding expected on the gradient path")
