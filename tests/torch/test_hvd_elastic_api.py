"""hvd.elastic for torch on one process, no job: Horovod 0.28's names and signatures, TorchState's commit copy of
a model and an optimizer, ElasticSampler's bookkeeping. Lost workers and new hosts: tests/run/test_elastic.py."""

import inspect

import pytest

torch = pytest.importorskip("torch")

import perseus.torch.horovod as hvd  # noqa: E402


def test_horovod_names_and_signatures():
    assert callable(hvd.elastic.run)
    assert list(inspect.signature(hvd.elastic.ElasticSampler).parameters) == ["dataset", "shuffle", "seed"]
    assert list(inspect.signature(hvd.elastic.TorchState).parameters) == ["model", "optimizer", "kwargs"]
    assert list(inspect.signature(hvd.elastic.ObjectState).parameters) == ["bcast_object", "get_rank", "kwargs"]
    for method in ("commit", "restore", "sync", "save", "reset", "check_host_updates", "register_reset_callbacks",
                   "on_reset"):
        assert callable(getattr(hvd.elastic.State, method))
    assert issubclass(hvd.elastic.TorchState, hvd.elastic.State)


def test_torch_state_restores_model_optimizer_and_values_to_the_commit():
    model = torch.nn.Linear(2, 1, bias=False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    state = hvd.elastic.TorchState(model, optimizer, epoch=0)
    with torch.no_grad():
        model.weight.fill_(1.0)
    model(torch.ones(1, 2)).sum().backward()
    optimizer.step()  # momentum state appears
    state.epoch = 3
    state.save()
    committed = model.weight.detach().clone()
    for _ in range(2):
        model(torch.ones(1, 2)).sum().backward()
        optimizer.step()
    state.epoch = 4
    state.restore()
    assert torch.equal(model.weight, committed) and state.epoch == 3
    assert state.model is model and state.optimizer is optimizer
    buffer = optimizer.state_dict()["state"][0]["momentum_buffer"]
    assert torch.allclose(buffer, torch.ones(1, 2))  # the momentum of the committed step, not of the later ones


def test_elastic_sampler_leaves_out_what_this_epoch_processed():
    sampler = hvd.elastic.ElasticSampler(list(range(10)), shuffle=False)
    assert list(sampler) == list(range(10)) and len(sampler) == 10
    sampler.record_batch(0, 4)
    saved = sampler.state_dict()
    assert saved == {"epoch": 0, "processed_indices": {0, 1, 2, 3}}
    other = hvd.elastic.ElasticSampler(list(range(10)), shuffle=False)
    other.load_state_dict(saved)
    assert list(other) == [4, 5, 6, 7, 8, 9]
    other.set_epoch(1)
    assert sorted(other) == list(range(10))


def test_shuffled_order_depends_on_seed_and_epoch_only():
    a, b = hvd.elastic.ElasticSampler(range(20), seed=3), hvd.elastic.ElasticSampler(range(20), seed=3)
    assert list(a) == list(b) and sorted(a) == list(range(20))
    b.set_epoch(1)
    assert list(a) != list(b)
