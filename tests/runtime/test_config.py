"""perseus.config: every PERSEUS_* variable (and GLOO_TIMEOUT_SECONDS): default, accepted values, errors."""

import warnings

import pytest

from perseus import config

# variable -> (a good raw value, its parsed value, bad raw values)
CASES = {
    "PERSEUS_ALLREDUCE_NANCHECK": ("1", True, ["2", "yes", "-1"]),
    "PERSEUS_ALLREDUCE_DTYPE": ("2", config.WireDtype.MIXED, ["3", "fp16", "-1"]),
    "PERSEUS_ALLREDUCE_MODE": ("1", config.AllreduceMode.HIERARCHICAL, ["2", "auto"]),
    "PERSEUS_ALLREDUCE_STREAMS": ("12", 12, ["0", "13", "four"]),
    "PERSEUS_ALLREDUCE_FUSION": ("128", 128, ["-1", "129", "1.5"]),
    "PERSEUS_ACCUMULATE_N_STEPS": ("4", 4, ["0", "-2", "x"]),
    "PERSEUS_DOWNSAMPLE_N_ELEMENTS": ("8", 8, ["0", "2.0"]),
    "PERSEUS_GRADIENT_MOMENTUM": ("0.9", 0.9, ["1.1", "-0.1", "nan", "inf", "high"]),
    "PERSEUS_NCCL_ENABLE": ("1", True, ["on", "3"]),
    "PERSEUS_ALLREDUCE_GRADIENT_SCALE": ("5", 5.0, ["0", "-1", "inf", "nan"]),
    "PERSEUS_OFFLINE_NEG": ("1", True, ["2"]),
    "PERSEUS_SHM_DISABLE": ("1", True, ["2", "yes"]),
    "PERSEUS_ENGINE_PROFILE": ("1", True, ["2", "on"]),
    "PERSEUS_PERF_CHECK_N_STEPS": ("100", 100, ["-1", "ten"]),
    "PERSEUS_MASTER_PORT": ("29600", 29600, ["0", "65536", "port"]),
    "PERSEUS_NCCL_NETWORK_INTERFACE": ("lo", "lo", ["no-such-nic0"]),
    "PERSEUS_GLOO_NETWORK_INTERFACE": ("lo", "lo", ["no-such-nic0"]),
    "GLOO_TIMEOUT_SECONDS": ("120", 120, ["0", "-5", "1m"]),
    "PERSEUS_CHANGE_HVD_ALLGATHER": ("1", True, ["2"]),
    "PERSEUS_USE_DDP_LAUNCHER": ("0", False, ["2"]),
    "PERSEUS_CPU_DISPATCH": ("scalar", "scalar", ["avx9", "AVX2"]),
    "PERSEUS_CYCLE_TIME_MS": ("0.5", 0.5, ["0", "-1", "nan", "fast"]),
    "PERSEUS_ENGINE_LIBRARY": (config.__file__, config.__file__, ["/nonexistent/libperseus_engine.so"]),
    "PERSEUS_MPI_BOOTSTRAP_LIBRARY": (config.__file__, config.__file__, ["/nonexistent/libperseus_mpi_openmpi.so"]),
    "PERSEUS_NCCL_LIBRARY": (config.__file__, config.__file__, ["/nonexistent/libnccl.so.2"]),
    "PERSEUS_CUDART_LIBRARY": (config.__file__, config.__file__, ["/nonexistent/libcudart.so.12"]),
    "PERSEUS_CAFFE_RANK_WEIGHTS": ("/tmp/weights", "/tmp/weights", ["/nonexistent-folder/weights"]),
}

DEFAULTS = {
    "nancheck": False, "dtype": config.WireDtype.FP16, "mode": None, "streams": 4, "fusion": None,
    "accumulate_n_steps": 1, "downsample_n_elements": 1, "gradient_momentum": 1.0, "nccl_enable": False,
    "gradient_scale": 10.0, "offline_neg": False, "shm_disable": False, "perf_check_n_steps": 0, "master_port": 6666,
    "nccl_network_interface": "eth0", "gloo_network_interface": "eth0", "gloo_timeout_seconds": 60,
    "change_hvd_allgather": False, "use_ddp_launcher": True,
}


def test_every_variable_of_the_seed_has_a_spec_and_a_case():
    assert set(CASES) == config.VARIABLE_NAMES
    assert len(config.VARIABLES) == len(config.VARIABLE_NAMES)


def test_defaults_are_the_seed_defaults():
    loaded = config.load({})
    for field, value in DEFAULTS.items():
        assert getattr(loaded, field) == value, field
    assert loaded.explicit == frozenset()


@pytest.mark.parametrize("variable", sorted(CASES))
def test_good_value_is_parsed_and_marked_set(variable):
    raw, parsed, _ = CASES[variable]
    loaded = config.load({variable: raw})
    spec = next(s for s in config.VARIABLES if s.name == variable)
    assert getattr(loaded, spec.field) == parsed
    assert loaded.is_set(variable)


@pytest.mark.parametrize("variable,bad", [(v, b) for v in sorted(CASES) for b in CASES[v][2]])
def test_bad_value_names_variable_value_and_what_is_allowed(variable, bad):
    with pytest.raises(config.ConfigError) as error:
        config.load({variable: bad})
    message = str(error.value)
    assert variable in message and repr(bad) in message and "expected" in message


def test_empty_value_means_not_set():
    loaded = config.load({"PERSEUS_ALLREDUCE_FUSION": "", "PERSEUS_ALLREDUCE_DTYPE": "  "})
    assert loaded.fusion is None and loaded.dtype == config.WireDtype.FP16 and not loaded.explicit


def test_interface_error_lists_the_interfaces_of_this_machine():
    with pytest.raises(config.ConfigError, match="lo"):
        config.load({"PERSEUS_GLOO_NETWORK_INTERFACE": "no-such-nic0"})


def test_mixed_dtype_needs_two_levels():
    with pytest.raises(config.ConfigError, match="PERSEUS_ALLREDUCE_MODE=0.*PERSEUS_ALLREDUCE_DTYPE=2"):
        config.load({"PERSEUS_ALLREDUCE_MODE": "0", "PERSEUS_ALLREDUCE_DTYPE": "2"})


@pytest.mark.parametrize("env,nodes,local,expected", [
    ({}, 2, 2, False),                                   # fp16 everywhere: one level
    ({"PERSEUS_ALLREDUCE_DTYPE": "2"}, 2, 2, True),      # mixed needs the node level
    ({"PERSEUS_ALLREDUCE_DTYPE": "2"}, 1, 4, False),     # one node: nothing between nodes
    ({"PERSEUS_ALLREDUCE_DTYPE": "2"}, 4, 1, False),     # one rank per node: nothing inside
    ({"PERSEUS_ALLREDUCE_MODE": "1"}, 2, 2, True),
    ({"PERSEUS_ALLREDUCE_MODE": "0", "PERSEUS_ALLREDUCE_DTYPE": "1"}, 2, 2, False),
])
def test_hierarchical_choice(env, nodes, local, expected):
    assert config.load(env).hierarchical(nodes, local) is expected


def test_not_honoured_warns_once_and_only_when_set(monkeypatch):
    monkeypatch.setattr(config, "_warned", set())
    unset = config.load({})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert not config.warn_not_honoured("PERSEUS_OFFLINE_NEG", "reason", unset)
    assert not caught
    explicit = config.load({"PERSEUS_OFFLINE_NEG": "1"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert config.warn_not_honoured("PERSEUS_OFFLINE_NEG", "because X", explicit)
        assert not config.warn_not_honoured("PERSEUS_OFFLINE_NEG", "because X", explicit)
    assert len(caught) == 1
    assert issubclass(caught[0].category, config.NotHonouredWarning)
    assert "PERSEUS_OFFLINE_NEG is set but not honoured: because X" in str(caught[0].message)


def test_describe_lists_every_variable_with_its_origin():
    rows = config.describe(config.load({"PERSEUS_ALLREDUCE_STREAMS": "8"}))
    assert [r[0] for r in rows] == [s.name for s in config.VARIABLES]
    assert ("PERSEUS_ALLREDUCE_STREAMS", "8", "set") in rows
    assert ("PERSEUS_ALLREDUCE_FUSION", "auto", "default") in rows
    assert ("PERSEUS_ALLREDUCE_DTYPE", "0", "default") in rows
