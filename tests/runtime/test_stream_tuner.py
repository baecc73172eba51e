"""The choice of how many streams carry the fusion groups (perseus/torch/_stream_tuner.py)."""

import pytest

from perseus.torch._stream_tuner import MARGIN, MEASURED_STEPS, WARMUP_STEPS, StreamTuner, choose


def test_a_set_value_is_used_from_the_start_and_never_measured():
    tuner = StreamTuner(4, fixed=True)
    assert tuner.decided and tuner.active == 4 and tuner.candidates == [4]
    tuner.record(1.0)
    tuner.before_step(lambda values: pytest.fail("no agreement needed"))
    assert tuner.active == 4 and tuner.spans == {4: []}


def test_one_stream_limit_needs_no_measurement():
    assert StreamTuner(1, fixed=False).decided


@pytest.mark.parametrize("one,many,expected", [(0.30, 0.25, 4), (0.30, 0.295, 1), (0.25, 0.30, 1)])
def test_one_stream_then_all_then_the_faster_by_a_margin(one, many, expected):
    tuner = StreamTuner(4, fixed=False)
    asked = []

    def agree(values):
        asked.append(list(values))
        return values

    used = []
    for step in range(2 * (WARMUP_STEPS + MEASURED_STEPS) + 2):
        tuner.before_step(agree)
        used.append(tuner.active)
        # the first step on a candidate pays for new connections: it must not count
        first_on_candidate = step in (0, WARMUP_STEPS + MEASURED_STEPS)
        tuner.record(10.0 if first_on_candidate else (one if tuner.active == 1 else many))
    per_candidate = WARMUP_STEPS + MEASURED_STEPS
    assert used == [1] * per_candidate + [4] * per_candidate + [expected] * 2
    assert asked == [[one, many]] and tuner.decided and tuner.active == expected
    assert tuner.medians == {1: one, 4: many}
    assert "{} stream(s)".format(expected) in tuner.describe()


def test_the_agreed_values_decide_not_this_ranks_own():
    tuner = StreamTuner(4, fixed=False)
    for _ in range(2 * (WARMUP_STEPS + MEASURED_STEPS) + 1):
        tuner.before_step(lambda values: [0.30, 0.20])  # the slowest rank saw 4 streams win
        tuner.record(0.25 if tuner.active == 1 else 0.40)  # here, 4 streams looked slower
    assert tuner.active == 4


def test_choose_prefers_fewer_streams_within_the_margin():
    assert choose([1, 4], [1.0, 1.0 - MARGIN / 2]) == 1
    assert choose([1, 4], [1.0, 1.0 - 2 * MARGIN]) == 4
