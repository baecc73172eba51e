"""perseus.horovod_kit: the framework-neutral rules every binding's Horovod API shares (no framework needed)."""

import pytest

from perseus.horovod_kit import errors, naming, ops, process_sets


def test_op_and_deprecated_average():
    assert ops.resolve_op(None, None) == ops.Average
    assert ops.resolve_op(ops.Sum, None) == ops.Sum
    with pytest.warns(DeprecationWarning):
        assert ops.resolve_op(None, False) == ops.Sum
    with pytest.raises(ValueError, match="supersedes average"):
        ops.resolve_op(ops.Sum, True)
    with pytest.raises(ValueError, match="hvd.Average, hvd.Sum"):
        ops.resolve_op(17, None)


def test_scale_rule_and_average_postscale():
    assert ops.scale_kind(is_integer=True, is_float16=False, on_host=True) == ops.SCALE_IN_FLOAT64
    assert ops.scale_kind(is_integer=False, is_float16=True, on_host=True) == ops.SCALE_IN_FLOAT32
    assert ops.scale_kind(is_integer=False, is_float16=True, on_host=False) == ops.SCALE_IN_OWN_DTYPE
    assert ops.postscale_for(ops.Average, 4, 2.0) == 0.5 and ops.postscale_for(ops.Sum, 4, 2.0) == 2.0
    with pytest.raises(ValueError, match="not Max"):
        ops.check_scalable(ops.Max, 2.0, 1.0, "hvd.allreduce")


def test_reducescatter_split_gives_the_first_ranks_one_row_more():
    assert ops.split_sizes(10, 4) == [3, 3, 2, 2] and ops.split_sizes(8, 4) == [2] * 4


def test_names_count_per_kind():
    namer = naming.Namer()
    assert [namer.name("allreduce"), namer.name("allgather"), namer.name("allreduce"), namer.name("x", "mine")] == \
        ["allreduce.noname.0", "allgather.noname.0", "allreduce.noname.1", "mine"]


def test_a_process_set_must_be_registered_before_a_collective_uses_it():
    process_sets.check_global(process_sets.global_process_set, "hvd.allreduce")
    process_sets.check_global(None, "hvd.allreduce")
    with pytest.raises(ValueError, match=r"hvd.allgather: ProcessSet\(.*\[0, 1\]\) is not a registered process set: "
                                         r"call hvd.add_process_set"):
        process_sets.check_global(process_sets.ProcessSet([1, 0]), "hvd.allgather")


def test_exception_types_are_horovods():
    assert issubclass(errors.HorovodInternalError, RuntimeError)
    assert issubclass(errors.HostsUpdatedInterrupt, RuntimeError)
    assert issubclass(errors.HorovodVersionMismatchError, ImportError)
    assert issubclass(errors.HorovodNotInitialized, ValueError)
    assert issubclass(errors.NotSupportedByPerseus, NotImplementedError)
