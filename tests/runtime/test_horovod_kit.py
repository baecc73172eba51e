"""perseus.horovod_kit: the framework-neutral rules every binding's Horovod API shares (no framework needed)."""

import json

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


def test_mxnet_style_names_qualify_the_given_name_and_number_a_process_sets_calls_apart():
    namer = naming.Namer(qualify_given=True)
    assert namer.name("allreduce", "w") == "allreduce.w"
    assert namer.name("allreduce") == "allreduce.noname.0"
    # a set's members issue its unnamed calls; the job's count must not move, or the ranks outside it disagree
    assert namer.name("allreduce", scope=3) == "allreduce.noname.0"
    assert namer.name("allreduce", scope=3) == "allreduce.noname.1"
    assert namer.name("allreduce") == "allreduce.noname.1"
    assert namer.names("grouped_allreduce", None, 2) == ["grouped_allreduce.noname.0.0",
                                                         "grouped_allreduce.noname.0.1"]
    assert namer.names("grouped_allreduce", "g", 3, scope=3) == ["grouped_allreduce.g.0", "grouped_allreduce.g.1",
                                                                 "grouped_allreduce.g.2"]
    namer.reset()
    assert namer.name("allreduce", scope=3) == "allreduce.noname.0"


def test_capabilities_answer_from_the_report_and_refuse_the_timeline():
    from perseus.horovod_kit.capabilities import Capabilities

    initialized = []
    caps = Capabilities(lambda: {"built": True, "nccl_version": 22105}, lambda: bool(initialized),
                        profile_instead="use the profiler")
    assert caps.nccl_built() == 22105 and caps.cuda_built() is True
    assert caps.gloo_enabled() is False  # Horovod's: a backend is enabled once hvd.init() chose it
    initialized.append(True)
    assert caps.gloo_enabled() is True and caps.mpi_enabled() is False
    host_only = Capabilities(lambda: {"built": False, "nccl_version": 22105}, lambda: True)
    assert host_only.nccl_built() == 0 and host_only.cuda_built() is False
    with pytest.raises(ValueError, match="MPI is not a transport"):
        caps.mpi_threads_supported()
    with pytest.raises(errors.NotSupportedByPerseus, match=r"start_timeline\('/tmp/t.json'\).*use the profiler"):
        caps.start_timeline("/tmp/t.json", mark_cycles=True)
    with pytest.raises(NotImplementedError, match="stop_timeline"):
        caps.stop_timeline()


@pytest.fixture
def four_rank_job():
    """The kit's queries answering for rank 1 of a 4-rank job; the registry and the binding's queries restored."""
    saved = dict(process_sets._queries)
    process_sets.bind_queries(lambda: 4, lambda: 1)
    yield
    process_sets.remove_all(lambda handle: None)
    process_sets._queries.clear()
    process_sets._queries.update(saved)


def test_process_set_life_opens_and_closes_the_binding_handle(four_rank_job):
    opened, closed = [], []

    def open_handle(ranks, set_id):
        opened.append((ranks, set_id))
        return "engine-{}".format(set_id) if 1 in ranks else None  # a rank outside the set holds no engine

    low = process_sets.add([3, 1], 4, open_handle)
    other = process_sets.add(process_sets.ProcessSet([0, 2]), 4, open_handle)
    assert (low.ranks, low.process_set_id, low.handle, low.rank(), low.size()) == ([1, 3], 1, "engine-1", 0, 2)
    assert (other.process_set_id, other.handle, other.rank(), other.included()) == (2, None, -1, False)
    assert opened == [([1, 3], 1), ([0, 2], 2)]
    assert process_sets.member_set(low, "hvd.allreduce") is low
    with pytest.raises(ValueError, match="rank 1 is not in"):
        process_sets.member_set(other, "hvd.allreduce")
    with pytest.raises(ValueError, match="exists already"):
        process_sets.add([1, 3], 4, open_handle)
    with pytest.raises(ValueError, match="registered already"):
        process_sets.add(low, 4, open_handle)
    with pytest.raises(ValueError, match="always there"):
        process_sets.add(process_sets.global_process_set, 4, open_handle)
    with pytest.raises(ValueError, match=r"ranks \[4\] are not ranks of this 4-rank job"):
        process_sets.add([1, 4], 4, open_handle)
    assert len(opened) == 2  # a refused set opened nothing
    assert process_sets.remove(low, closed.append) is True and closed == ["engine-1"]
    assert low.process_set_id is None and low.handle is None
    assert process_sets.remove(low, closed.append) is False
    process_sets.remove_all(closed.append)
    assert closed == ["engine-1"]  # rank 1 held no engine of {0, 2}
    assert other.process_set_id is None
    assert process_sets.add([0, 1], 4, open_handle).process_set_id == 1  # ids start again after a shutdown


def test_a_collective_on_a_closed_set_names_what_closed_it(four_rank_job):
    def open_handle(ranks, set_id):
        return "engine-{}".format(set_id)

    removed = process_sets.add([0, 1], 4, open_handle)
    process_sets.remove(removed, lambda handle: None)
    with pytest.raises(ValueError, match=r"hvd.allreduce: .* is not registered any more: it was closed by "
                                         r"hvd.remove_process_set\(...\): to use it again, call hvd.add_process_set"):
        process_sets.check_global(removed, "hvd.allreduce")
    shut = process_sets.add([1, 2], 4, open_handle)
    process_sets.remove_all(lambda handle: None)
    with pytest.raises(ValueError, match=r"closed by hvd.shutdown\(\): register it again after hvd.init\(\)"):
        process_sets.check_global(shut, "hvd.allreduce")
    reset = process_sets.add([1, 3], 4, open_handle)
    process_sets.remove_all(lambda handle: None, process_sets.CLOSED_BY_RESET)
    with pytest.raises(ValueError, match=r"closed by an elastic reset .* in a reset callback "
                                         r"\(state.register_reset_callbacks\)"):
        process_sets.member_set(reset, "hvd.broadcast")
    again = process_sets.add(reset, 4, open_handle)  # the same object, registered again
    assert again is reset and reset.closed_by is None and process_sets.member_set(reset, "hvd.broadcast") is reset
    with pytest.raises(ValueError, match="is not a registered process set: call hvd.add_process_set"):
        process_sets.check_global(process_sets.ProcessSet([0, 3]), "hvd.allreduce")  # never registered


def test_sets_given_at_init_are_added_in_order(four_rank_job):
    added = []
    process_sets.add_at_init(None, added.append)
    process_sets.add_at_init("dynamic", added.append)
    process_sets.add_at_init([[0, 1], [2, 3]], added.append)
    assert added == [[0, 1], [2, 3]]


def test_root_rank_is_global_and_numbered_by_the_set(four_rank_job):
    assert process_sets.root_index(None, 3, 4, "hvd.broadcast") == 3
    with pytest.raises(ValueError, match="hvd.broadcast: root_rank=4 is not a rank of this 4-rank job"):
        process_sets.root_index(None, 4, 4, "hvd.broadcast")
    odd = process_sets.add([1, 3], 4, lambda ranks, set_id: "engine")
    assert process_sets.root_index(odd, 3, 2, "hvd.broadcast") == 1
    with pytest.raises(ValueError, match=r"root_rank=2 is not in the process set \[1, 3\]"):
        process_sets.root_index(odd, 2, 2, "hvd.broadcast")


def test_engine_basics_before_init_and_after_a_failed_start():
    from perseus.horovod_kit.basics import EngineBasics

    def refuse(**policy):
        raise ConnectionRefusedError("no rendezvous")

    stopped = []
    basics = EngineBasics(refuse, stopped.append)
    assert basics.is_initialized() is False
    for query in (basics.size, basics.rank, basics.local_size, basics.local_rank, basics.cross_size,
                  basics.cross_rank, basics.engine):
        with pytest.raises(errors.HorovodNotInitialized, match="use hvd.init"):
            query()
    with pytest.raises(ConnectionRefusedError):
        basics.init()
    assert basics.is_initialized() is False
    basics.shutdown()  # nothing started: nothing stopped
    assert stopped == []


def test_the_manifest_every_wheel_carries_is_read_and_checked_alike(tmp_path):
    from perseus.horovod_kit import manifest

    wheel = manifest.Wheel("perseus_mxnet", "mxnet", "mxnet_version", ("release", "version", "mxnet_version"))
    with pytest.raises(manifest.BrokenInstallError, match=r"perseus_mxnet is incomplete: cannot read .*"
                                                          r"build_manifest.json .*wheel for your mxnet, or run "
                                                          r"install_AIACC-Training.sh"):
        wheel.read_manifest(str(tmp_path))
    (tmp_path / manifest.MANIFEST_FILE).write_text("{not json")
    with pytest.raises(manifest.BrokenInstallError, match="perseus_mxnet is damaged: .* is not valid JSON"):
        wheel.read_manifest(str(tmp_path))
    (tmp_path / manifest.MANIFEST_FILE).write_text('{"release": "2.0.0"}')
    with pytest.raises(manifest.BrokenInstallError, match="lacks version, mxnet_version; reinstall it"):
        wheel.read_manifest(str(tmp_path))
    built = {"release": "2.0.0", "version": "2.0.0+1.9.1", "mxnet_version": "1.9.1"}
    (tmp_path / manifest.MANIFEST_FILE).write_text(json.dumps(built))
    assert wheel.read_manifest(str(tmp_path)) == built
    library = str(tmp_path / "_perseus_mxnet.so")
    with pytest.raises(manifest.BrokenInstallError, match="_perseus_mxnet.so is missing; reinstall the perseus_mxnet"):
        wheel.require_library(library)
    wheel.check_embedded(dict(built), built, str(tmp_path), library)
    with pytest.raises(manifest.BrokenInstallError, match=r"perseus_mxnet is inconsistent: .*build_manifest.json "
                                                          r"does not describe .*built as 2.0.0\+1.8.0 for mxnet 1.8.0"):
        wheel.check_embedded(dict(built, version="2.0.0+1.8.0", mxnet_version="1.8.0"), built, str(tmp_path), library)
    assert "already loaded from /a; cannot load a second copy from /b" in str(wheel.second_copy("/a", "/b"))
    assert issubclass(manifest.BuildMismatchError, ImportError) and issubclass(manifest.BrokenInstallError, ImportError)
    assert (manifest.cuda_words("11.8"), manifest.cuda_words(None)) == ("CUDA 11.8", "CPU only")
    assert (manifest.abi_words(True), manifest.abi_words(False)) == ("cxx11 ABI", "pre-cxx11 ABI")


def test_the_self_test_skeleton_checks_the_manifest_and_fails_with_exit_1(capsys):
    from perseus.horovod_kit.selftest import SelfTest

    check = SelfTest("perseus.mxnet", "mxnet", "mxnet_version")
    assert check.arguments([]) == (None, None) and check.arguments(["2.0.0", "1.9.1"]) == ("2.0.0", "1.9.1")
    assert check.arguments(["--help"]) is None and check.arguments(["a", "b", "c"]) is None
    assert "usage: python -m perseus.mxnet._selftest [RELEASE [MXNET_PUBLIC_VERSION]]" in capsys.readouterr().err
    built = {"version": "2.0.0+1.9.1", "mxnet_version": "1.9.1"}
    check.check_manifest(built, "1.9.1", "2.0.0", None, "2.0.0")
    check.check_manifest(built, "1.9.1", None, None, "2.0.0")
    failures = [
        ((built, "1.9.0", None, None, "2.0.0"), "built for mxnet 1.9.1, running mxnet 1.9.0"),
        ((built, "1.9.1", "2.1.0", None, "2.0.0"),
         "manifest says 2.0.0+1.9.1 for mxnet 1.9.1; expected release 2.1.0 for mxnet 1.9.1"),
        ((built, "1.9.1", "2.0.0", "1.8.0", "2.0.0"),
         "manifest says 2.0.0+1.9.1 for mxnet 1.9.1; expected release 2.0.0 for mxnet 1.8.0"),
        ((built, "1.9.1", None, None, "1.5.0"), "core reports release 1.5.0, the wheel is 2.0.0+1.9.1"),
    ]
    for args, message in failures:
        with pytest.raises(SystemExit) as stopped:
            check.check_manifest(*args)
        assert stopped.value.code == 1
        assert capsys.readouterr().err.startswith("perseus.mxnet self-test failed: " + message)


def test_a_set_that_fails_to_close_does_not_keep_the_others_open(four_rank_job):
    def open_handle(ranks, set_id):
        return "engine-{}".format(set_id)

    closed = []

    def close_handle(handle):
        closed.append(handle)
        if handle == "engine-1":
            raise RuntimeError("engine-1 lost a peer while closing")

    first, second = process_sets.add([0, 1], 4, open_handle), process_sets.add([1, 2], 4, open_handle)
    with pytest.raises(RuntimeError, match="engine-1 lost a peer"):
        process_sets.remove_all(close_handle)
    assert sorted(closed) == ["engine-1", "engine-2"]  # the second set is closed although the first failed
    assert first.handle is None and second.handle is None and second.process_set_id is None
