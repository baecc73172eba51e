"""Each rule of `check conda`, on small environment files: it fires naming file, package and rule,
and a correct file of the same era passes."""

from __future__ import annotations

import pytest
import yaml

from aiacc_build import naming
from aiacc_build.checks.conda_check import expected_files
from aiacc_build.checks.conda_env import parse_env_file
from aiacc_build.checks.conda_rules import check_env

from .conftest import release

PATH = "1.5.0/conda/latest/x.yaml"


USE = "# Use: CONDA_DEFAULT_CHANNELS=conda-forge conda env create -f x.yaml\n"  # the rendered header's command


def env_text(channels, specs, pip=("https://example.invalid/perseus_common-1.5.0-py3-none-any.whl",), name="x", header=USE) -> str:
    return header + yaml.safe_dump({"name": name, "channels": list(channels), "dependencies": [*specs, {"pip": list(pip)}]})


def findings(text: str, table, expected=None):
    env, problems = parse_env_file(PATH, text)
    assert env is not None, problems
    return check_env(env, table, expected)


def rules(found) -> set[str]:
    return {f.rule for f in found}


def test_a_seed_era_pytorch_file_passes(table):
    text = env_text(["pytorch", "conda-forge"], ["python=3.6", "pip", "pytorch=1.7.1", "cudatoolkit=11.0"])
    assert findings(text, table) == []


def test_pytorch_removed_from_its_channel_names_file_package_and_source(table):
    text = env_text(["pytorch", "conda-forge"], ["python=3.6", "pip", "pytorch=1.4.0", "cudatoolkit=10.1"])
    (finding,) = findings(text, table)
    assert (finding.file, finding.rule, finding.subject) == (PATH, "version-removed", "pytorch=1.4.0")
    assert "removed from channel pytorch" in finding.message and "issues/104754" in finding.message


def test_lts_build_exists_only_up_to_python_38(table):
    ok = env_text(["pytorch-lts", "conda-forge"], ["python=3.8", "pip", "pytorch=1.8.2", "cudatoolkit=10.2"])
    assert findings(ok, table) == []
    bad = env_text(["pytorch-lts", "conda-forge"], ["python=3.9", "pip", "pytorch=1.8.2", "cudatoolkit=10.2"])
    (finding,) = findings(bad, table)
    assert finding.rule == "pytorch-build" and "not 3.9" in finding.message


def test_pytorch_cuda_variant_must_exist_for_that_release(table):
    text = env_text(["pytorch", "conda-forge"], ["python=3.8", "pip", "pytorch=1.7.1", "cudatoolkit=11.1"])
    (finding,) = findings(text, table)
    assert finding.rule == "pytorch-build" and "CUDA 9.2, 10.1, 10.2, 11.0, not 11.1" in finding.message


def test_modern_pytorch_channel_builds_use_pytorch_cuda_and_need_nvidia(table):
    good = env_text(["pytorch", "nvidia", "conda-forge"], ["python=3.10", "pip", "pytorch=2.5.1", "pytorch-cuda=12.4"])
    assert findings(good, table) == []
    old_style = env_text(["pytorch", "conda-forge"], ["python=3.10", "pip", "pytorch=1.13.1", "cudatoolkit=11.7"])
    assert "era-pytorch-cuda" in rules(findings(old_style, table))
    no_nvidia = env_text(["pytorch", "conda-forge"], ["python=3.10", "pip", "pytorch=2.5.1", "pytorch-cuda=12.4"])
    (finding,) = findings(no_nvidia, table)
    assert (finding.rule, finding.subject) == ("requires-channel", "pytorch-cuda")


def test_pytorch_cuda_before_113_is_the_wrong_era(table):
    text = env_text(["pytorch", "nvidia", "conda-forge"], ["python=3.8", "pip", "pytorch=1.12.1", "pytorch-cuda=11.6"])
    assert "era-pytorch-cuda" in rules(findings(text, table))


def test_pytorch_after_the_channel_stopped_is_not_there(table):
    text = env_text(["pytorch", "conda-forge"], ["python=3.11", "pip", "pytorch=2.13.0", "cpuonly"])
    (finding,) = findings(text, table)
    assert finding.rule == "version-not-on-channel" and "channel pytorch has no pytorch 2.13.0" in finding.message


def test_cudatoolkit_ends_at_118_cuda_version_takes_over(table):
    text = env_text(["conda-forge"], ["python=3.11", "pip", "cudatoolkit=12.4"])
    found = findings(text, table)
    assert {"era-cudatoolkit", "version-not-on-channel"} <= rules(found)
    assert any("pin `cuda-version=12.4`" in f.message for f in found)
    assert findings(env_text(["conda-forge"], ["python=3.11", "pip", "cuda-version=12.4"]), table) == []


def test_cuda_version_12_7_never_existed(table):
    (finding,) = findings(env_text(["conda-forge"], ["python=3.11", "pip", "cuda-version=12.7"]), table)
    assert finding.rule == "version-not-on-channel" and finding.subject == "cuda-version=12.7"


def test_strict_channel_priority_takes_the_first_channel_with_the_package(table):
    # conda-forge listed first: PyTorch would come from conda-forge's own builds, not our convention.
    text = env_text(["conda-forge", "pytorch"], ["python=3.8", "pip", "pytorch=1.7.1", "cudatoolkit=11.0"])
    assert "not-our-convention" in rules(findings(text, table))
    # nvidia first: its cuda-version shadows conda-forge's, and it has no 11.7.
    shadowed = env_text(["nvidia", "conda-forge"], ["python=3.9", "pip", "cuda-version=11.7"])
    (finding,) = findings(shadowed, table)
    assert finding.rule == "channel-priority" and "conda-forge has it: list it first" in finding.message


def test_frameworks_that_come_from_pip_must_not_be_conda_specs(table):
    text = env_text(["conda-forge"], ["python=3.6", "pip", "tensorflow-gpu=2.4.0"])
    (finding,) = findings(text, table)
    assert (finding.rule, finding.subject) == ("pip-only", "tensorflow-gpu")


def test_channels_must_be_known_and_defaults_excluded(table):
    found = findings(env_text(["bioconda", "conda-forge", "defaults"], ["python=3.6", "pip"]), table)
    assert rules(found) == {"unknown-channel", "defaults-channel"}
    assert [f.subject for f in found if f.rule == "unknown-channel"] == ["bioconda"]


def test_nodefaults_is_refused_as_conda_26_7_refuses_it(table):
    """conda 26.7 (`conda env create` = `conda create`) merges the file's channels with the configured ones and
    reads `nodefaults` as a channel name (conda/models/environment.py): UnavailableInvalidChannel before the solve."""
    (finding,) = findings(env_text(["conda-forge", "nodefaults"], ["python=3.6", "pip"]), table)
    assert finding.rule == "nodefaults-refused" and "CONDA_DEFAULT_CHANNELS=conda-forge" in finding.message
    assert findings(env_text(["conda-forge"], ["python=3.6", "pip"]), table) == []


def test_the_header_command_names_the_local_file_as_real_conda_26_7_1_needs(releases, table):
    """conda 26.7.1 crashed on `conda env create -f http://.../FILE` for a file with a pip section (get_pip_workdir
    gets args.file, a list, when the URL gives no workdir); 26.5.3 ran it (bench/RESULTS.md)."""
    specs = ["python=3.6", "pip"]
    url = "# Use: CONDA_DEFAULT_CHANNELS=conda-forge conda env create -f https://example.invalid/conda/latest/x.yaml\n"
    (finding,) = findings(env_text(["conda-forge"], specs, header=url), table)
    assert finding.rule == "use-line" and "26.7.1" in finding.message and "download the file first" in finding.message
    (finding,) = findings(env_text(["conda-forge"], specs, header="# Use: conda env create -f x.yaml\n"), table)
    assert finding.rule == "use-line" and "CONDA_DEFAULT_CHANNELS=conda-forge conda env create -f x.yaml" in finding.message
    assert findings(env_text(["conda-forge"], specs), table) == []
    # a file of the release's cells must carry the line at all
    want = expected_files(release(releases, "1.5.0").cells)["torch_1.7.1_cuda11.0_py38.yaml"]
    right = env_text(["pytorch", "conda-forge"], ["python=3.8", "pip", "pytorch=1.7.1", "cudatoolkit=11.0"],
                     pip=[naming.common_wheel_url(want.cell.release), naming.wheel_url(want.cell)], header="# no command\n")
    assert [(f.rule, f.subject) for f in findings(right, table, want)] == [("use-line", "header")]


def test_every_pin_the_adapter_declares_reaches_the_file(releases, table):
    modern = release(releases, "2.0.0")
    want = expected_files(modern.cells)["mxnet_1.9.1_cpu_py39.yaml"]
    wheels = [naming.common_wheel_url(want.cell.release)] + [naming.wheel_url(v) for v in want.variants]
    without = env_text(["conda-forge"], ["python=3.9", "pip"], pip=["mxnet==1.9.1", *wheels])
    (finding,) = findings(without, table, want)
    assert (finding.rule, finding.subject) == ("adapter-pin", "numpy<1.24")
    pinned = env_text(["conda-forge"], ["python=3.9", "pip"], pip=["mxnet==1.9.1", "numpy<1.24", *wheels])
    assert findings(pinned, table, want) == []


def test_specs_must_parse_and_python_must_be_pinned(table):
    found = findings(env_text(["conda-forge"], ["pip", "cudatoolkit=>>11"]), table)
    assert {"match-spec", "python-pin"} <= rules(found)


def test_cudnn_needs_a_pinned_toolkit(table):
    found = findings(env_text(["conda-forge"], ["python=3.6", "pip", "cudnn"]), table)
    assert rules(found) == {"cudnn-without-cuda"}


def test_pip_lines_must_be_options_wheel_urls_or_requirements(table):
    text = env_text(["conda-forge"], ["python=3.6", "pip"], pip=["--frobnicate x", "https://x.invalid/a.tar.gz", "torch 1.7 cpu", "torch==1.7.1"])
    found = [f for f in findings(text, table) if f.rule == "pip-line"]
    assert [f.subject for f in found] == ["--frobnicate x", "https://x.invalid/a.tar.gz", "torch 1.7 cpu"]


def test_structure_problems_are_reported_not_raised():
    env, problems = parse_env_file(PATH, "name: x\nchannels: [conda-forge]\ndependencies: [python=3.6]\n")
    assert env is None and problems[0].rule == "structure" and "pip:" in problems[0].message
    env, problems = parse_env_file(PATH, "name: [unclosed\n")
    assert env is None and problems[0].rule == "yaml"


def test_the_file_must_say_what_its_cell_needs(releases, table):
    seed = release(releases, "1.5.0")
    want = expected_files(seed.cells)["torch_1.7.1_cuda11.0_py38.yaml"]
    right_pip = [naming.common_wheel_url(want.cell.release), naming.wheel_url(want.cell)]
    good = env_text(["pytorch", "conda-forge"], ["python=3.8", "pip", "pytorch=1.7.1", "cudatoolkit=11.0"], pip=right_pip, name="x")
    assert findings(good, table, want) == []
    wrong = env_text(["pytorch", "conda-forge"], ["python=3.7", "pip", "pytorch=1.7.0", "cudatoolkit=10.2"], pip=right_pip[:1])
    found = findings(wrong, table, want)
    assert {"cell-python", "cell-cuda", "cell-framework", "cell-wheel"} <= rules(found)
    (missing_wheel,) = [f for f in found if f.rule == "cell-wheel"]
    assert missing_wheel.subject == "perseus_torch-1.5.0%2B1.7.1-cp38-cp38-linux_x86_64.whl"


@pytest.mark.parametrize("name", ["torch_2.13.0_cuda13.0_py311.yaml", "tensorflow_2.21.0_cpu_py311.yaml"])
def test_pip_framework_cells_need_their_exact_build(releases, table, name):
    modern = release(releases, "2.0.0")
    want = expected_files(modern.cells)[name]
    pip_lines = [naming.common_wheel_url(want.cell.release)] + [naming.wheel_url(v) for v in want.variants]
    text = env_text(["conda-forge"], [f"python={want.python}", "pip"] + ([f"cuda-version={want.cell.cuda}"] if want.cell.cuda else []), pip=pip_lines)
    found = findings(text, table, want)
    assert {f.rule for f in found} == {"cell-framework"}
    # tensorflow-cpu has no aarch64 wheels: that variant needs another build, each one is named
    assert {f.subject for f in found} == {v.build.requirement for v in want.variants}
