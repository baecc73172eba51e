"""perseus.horovod_kit.elastic on one process (no framework, no engine): State / ObjectState commit, restore and
sync, and run_fn's retry rules. One rank: rank 0's broadcast is the object itself. The multi-process behaviour
(lost ranks, new hosts) is tests/run/test_elastic.py's."""

import pytest

from perseus.horovod_kit import elastic_worker
from perseus.horovod_kit.elastic import ObjectState, State, run_fn
from perseus.horovod_kit.errors import HorovodInternalError, HostsUpdatedInterrupt


def one_rank_state(**values):
    return ObjectState(bcast_object=lambda obj: obj, get_rank=lambda: 0, **values)


def test_commit_then_restore_returns_to_the_commit():
    state = one_rank_state(epoch=0, weights=[0.0])
    state.epoch, state.weights = 1, [1.0]
    state.commit()
    state.epoch, state.weights = 2, [2.0]
    state.restore()
    assert (state.epoch, state.weights) == (1, [1.0])


def test_sync_takes_what_the_broadcast_gives():
    state = ObjectState(bcast_object=lambda obj: {"epoch": 7}, get_rank=lambda: 1, epoch=0)
    state.sync()
    assert state.epoch == 7


def test_a_host_update_interrupts_at_the_next_check():
    state = one_rank_state(epoch=0)
    state.check_host_updates()  # nothing yet
    state.on_hosts_updated(5, True)
    with pytest.raises(HostsUpdatedInterrupt) as caught:
        state.commit()
    assert caught.value.skip_sync is True  # only removals: no new worker needs the state
    state.check_host_updates()  # the same update is not raised twice


def test_base_state_names_what_a_subclass_must_implement():
    with pytest.raises(NotImplementedError, match="State does not implement save"):
        State(lambda obj: obj, lambda: 0).save()


def test_run_fn_resets_after_an_interrupt_and_calls_the_reset_callbacks():
    state = one_rank_state(tries=0)
    resets, callbacks, syncs = [], [], []
    state.register_reset_callbacks([lambda: callbacks.append(1)])
    original_sync = state.sync
    state.sync = lambda: (syncs.append(1), original_sync())

    def train(st):
        st.tries += 1
        if st.tries == 1:
            raise HostsUpdatedInterrupt(skip_sync=True)
        return "done after {}".format(st.tries)

    assert run_fn(train, lambda: resets.append(1))(state) == "done after 2"
    assert resets == [1] and callbacks == [1]
    assert syncs == [1]  # the first attempt synced; the retry after removals only did not


def test_a_lost_rank_outside_elastic_perseusrun_is_not_recovered(monkeypatch):
    monkeypatch.delenv(elastic_worker.DRIVER_VARIABLE, raising=False)
    state = one_rank_state(step=0)

    def train(st):
        raise HorovodInternalError("peer lost")

    with pytest.raises(HorovodInternalError, match="not supported: recovering from a lost rank needs elastic perseusrun"):
        run_fn(train, lambda: None)(state)


def test_a_bad_driver_address_is_named(monkeypatch):
    monkeypatch.setenv(elastic_worker.DRIVER_VARIABLE, "nohostport")
    with pytest.raises(RuntimeError, match="PERSEUS_ELASTIC_DRIVER='nohostport' is not HOST:PORT"):
        elastic_worker.rendezvous()
