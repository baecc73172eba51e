"""`aiacc-build matrix list/show/validate`: output, --json, exit codes, --help."""

from __future__ import annotations

import json
import re

import pytest

from aiacc_build.cli import main
from aiacc_build.matrix import select_cells, load_release


def run_json(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_list_json_carries_every_name(capsys):
    cells = run_json(capsys, "matrix", "list", "--release", "1.5.0", "--json")
    assert len(cells) == len(load_release("1.5.0").cells) == 59
    torch = next(c for c in cells if c["key"] == "1.5.0/torch-1.7.1/cuda11.0/py3.6/x86_64")
    assert torch["wheel"]["path"] == "cuda110/perseus_torch-1.5.0+1.7.1-cp36-cp36m-linux_x86_64.whl"
    assert torch["wheel"]["url"].endswith("/cuda110/perseus_torch-1.5.0%2B1.7.1-cp36-cp36m-linux_x86_64.whl")
    assert torch["wheel"]["repaired_filename"] == "perseus_torch-1.5.0+1.7.1-cp36-cp36m-manylinux2014_x86_64.whl"
    assert [c["filename"] for c in torch["conda"]] == ["torch_1.7.1_cuda11.0_py36.yaml"]
    assert {d["tag"] for d in torch["docker"] if not d["local"]} == {
        "centos7-cu11.0-pt1.7.1-py36-latest", "ubuntu1804-cu11.0-pt1.7.1-py36-latest"}
    assert torch["ci"]["job_id"] == "torch-1_7_1-cuda110-x86_64"
    assert torch["ci"]["cibw_identifier"] == "cp36-manylinux_x86_64"
    assert torch["ci"]["cibw_build"] == "cp36-manylinux_x86_64 cp37-manylinux_x86_64 cp38-manylinux_x86_64 cp39-manylinux_x86_64"
    assert torch["build"] == {"requirement": "torch==1.7.1+cu110", "index_url": "https://download.pytorch.org/whl/cu110",
                              "cuda_variant": "cu110", "cxx11_abi": False}
    tf = next(c for c in cells if c["key"] == "1.5.0/tensorflow-2.4.0/cuda11.0/py-any/x86_64")
    assert tf["wheel"]["filename"] == "perseus_tensorflow-1.5.0+2.4.0-py2.py3-none-manylinux1_x86_64.whl"
    assert "perseus-training:centos7-cu11.0-tf2.4.0-py36-latest" in {d["image"] for d in tf["docker"]}


@pytest.mark.parametrize(
    ("args", "count"),
    [
        (("--framework", "torch", "--cuda", "10.2"), 22),
        (("--cuda", "cu110"), 9),
        (("--python", "3.6", "--framework", "mxnet"), 10),
        (("--python", "3.9"), 5),
        (("--cuda", "cpu"), 0),
    ],
)
def test_list_filters(capsys, args, count):
    assert len(run_json(capsys, "matrix", "list", "--release", "1.5.0", "--json", *args)) == count


def test_list_cpu_cells_of_modern_release(capsys):
    cells = run_json(capsys, "matrix", "list", "--release", "2.0.0", "--cuda", "cpu", "--framework", "torch", "--json")
    assert all(c["wheel"]["folder"] == "cpu" for c in cells) and len(cells) == 15


def test_list_table(capsys):
    assert main(["matrix", "list", "--release", "1.5.0", "--framework", "tensorflow"]) == 0
    out = capsys.readouterr().out
    assert "7 cells" in out and "1.5.0/tensorflow" in out


@pytest.mark.parametrize(
    "query",
    [
        "1.5.0/torch-1.7.1/cuda11.0/py3.6/x86_64",
        "cuda110/perseus_torch-1.5.0+1.7.1-cp36-cp36m-linux_x86_64.whl",
        "https://ali-perseus-release.oss-cn-huhehaote.aliyuncs.com/cuda110/perseus_torch-1.5.0%2B1.7.1-cp36-cp36m-linux_x86_64.whl",
    ],
)
def test_show_by_key_path_or_url(capsys, query):
    cell = run_json(capsys, "matrix", "show", query, "--json")
    assert cell["key"] == "1.5.0/torch-1.7.1/cuda11.0/py3.6/x86_64"


def test_show_human(capsys):
    assert main(["matrix", "show", "1.5.0/mxnet-1.9.0/cuda11.0/py-any/x86_64"]) == 0
    out = capsys.readouterr().out
    assert "mxnet_1.9.0_cuda11.0_py36.yaml" in out


def test_show_unknown_cell_exits_4_with_nearest(capsys):
    assert main(["matrix", "show", "1.5.0/torch-1.7.1/cuda10.2/py3.6/x86_64"]) == 4
    err = " ".join(capsys.readouterr().err.split())
    assert "no cell" in err and "1.5.0/torch-1.7.1/cuda11.0/py3.6/x86_64" in err


def test_show_ambiguous_file_name_names_the_folders(capsys):
    assert main(["matrix", "show", "perseus_torch-1.5.0+1.6.0-cp36-cp36m-linux_x86_64.whl"]) == 4
    err = "".join(capsys.readouterr().err.split())
    assert "cuda101/perseus_torch-1.5.0+1.6.0" in err and "cuda102/perseus_torch-1.5.0+1.6.0" in err


def test_validate_all_and_bad_file(capsys, tmp_path, seed_text):
    assert main(["matrix", "validate"]) == 0
    assert "59 cells" in capsys.readouterr().out
    bad = tmp_path / "1.5.0.yaml"
    bad.write_text(seed_text.replace('cuda11.0: ["1.7.0", "1.7.1"]', 'cuda11.0: ["1.7.0", "1.2.0"]'))
    assert main(["matrix", "validate", str(bad)]) == 3
    err = capsys.readouterr().err
    assert f"{bad}:" in "".join(err.split())  # the CLI's console may wrap long lines
    assert "torch 1.2.0 never had a cuda11.0 build" in " ".join(err.split())


def test_validate_refuses_a_base_image_that_never_existed(capsys, tmp_path, seed_text):
    bad = tmp_path / "1.5.0.yaml"
    bad.write_text(seed_text.replace("docker_os_types: [centos7, ubuntu1804]", "docker_os_types: [centos7, ubuntu2004]"))
    assert main(["matrix", "validate", str(bad)]) == 3
    err = " ".join(capsys.readouterr().err.split())
    found = re.search(r"base image nvidia/cuda:(\d+\.\d+)-cudnn-devel-ubuntu20\.04 was never published upstream.*?; nearest real tags: ([^ ,]+)", err)
    assert found is not None, err
    cuda, nearest = found.groups()
    assert nearest.startswith(f"nvidia/cuda:{cuda}") and nearest.endswith("-devel-ubuntu18.04")


def test_unknown_release_exits_4(capsys):
    assert main(["matrix", "list", "--release", "9.9.9"]) == 4
    assert "known releases: 1.5.0, 2.0.0" in " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize("sub", [[], ["list"], ["show"], ["validate"], ["sync"], ["schema"]])
def test_help_everywhere(capsys, sub):
    assert main(["matrix", *sub, "--help"]) == 0
    assert "Usage:" in capsys.readouterr().out


def test_select_cells_python_matches_environments():
    seed = load_release("1.5.0")
    assert len(select_cells(seed.cells, python="3.6")) == 13 + 7 + 10  # one py3.6 torch cell per (version, CUDA) pair
    assert select_cells(seed.cells, cuda="cuda11.0") == select_cells(seed.cells, cuda="11.0") == select_cells(seed.cells, cuda="cu110")
    assert select_cells(seed.cells, framework="torch", arch="aarch64") == []
