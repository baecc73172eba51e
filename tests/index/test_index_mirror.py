"""The mirror of a release without buildable cells (1.5.0 here): perseus-common, indexes, manifest, sums.

The full mirror with a built cell wheel is tested in test_index_install.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import requests
from local_build import shared_cache_dir

from aiacc_build.wheels.cache import BuildCache
from aiacc_build.wheels.driver import Builder
from aiacc_build.wheels.envs import create_venv, install
from aiacc_build.registry import RegistryClient
from aiacc_build.wheels.plan import plan_cells
from aiacc_build.wheels.record import load_record, save_record
from aiacc_build.wheels.toolchain import find_interpreter
from aiacc_build.errors import BuildError, ConfigurationError
from aiacc_build.index.mirror import build_index
from aiacc_build.index.serve import MirrorServer
from aiacc_build.index.simple import IndexedFile, project_page
from aiacc_build.matrix import load_release

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


@pytest.fixture(scope="module")
def mirror_150(tmp_path_factory) -> Path:
    """dist/ of release 1.5.0 built for real: no cell is buildable here, perseus-common is."""
    base = tmp_path_factory.mktemp("m150")
    release = load_release("1.5.0")
    plan = plan_cells("1.5.0", release.cells, RegistryClient(base / "registry", offline=True))
    assert not plan.to_build
    Builder(BuildCache(shared_cache_dir()), base / "dist").build(release.info, plan)
    build_index("1.5.0", base / "dist")
    return base / "dist"


def test_manifest_lists_every_cell_with_its_reason(mirror_150):
    manifest = json.loads((mirror_150 / "1.5.0" / "manifest.json").read_text())
    release = load_release("1.5.0")
    assert manifest["release"] == "1.5.0" and manifest["schema_version"] == 1
    assert len(manifest["cells"]) == len(release.cells)
    assert {c["status"] for c in manifest["cells"]} == {"deferred"}
    assert all(c["reason"] for c in manifest["cells"])
    seed = next(c for c in manifest["cells"] if c["key"] == "1.5.0/torch-1.7.1/cuda11.0/py3.6/x86_64")
    assert seed["path"] == "cuda110/perseus_torch-1.5.0+1.7.1-cp36-cp36m-linux_x86_64.whl"
    common = manifest["common"]
    assert common["path"] == "perseus_common-1.5.0-py3-none-any.whl" and common["version"] == "1.5.0"
    assert manifest["indexes"] == {"": "simple/"}


def test_sha256sums_checks_with_coreutils(mirror_150):
    root = mirror_150 / "1.5.0"
    lines = (root / "SHA256SUMS").read_text().splitlines()
    assert [line.split("  ")[1] for line in lines] == [
        "SUPPORT.md",
        # the Caffe patches are source: every mirror publishes them, whatever was built
        "caffe/patches/bvlc_caffe/1_perseus_distribute_train.patch",
        "caffe/patches/bvlc_caffe/2_cudnn_batchnorm.patch",
        "caffe/patches/bvlc_caffe/3_data_augmentation.patch",
        "install_AIACC-Training.sh",
        "manifest.json",
        "perseus_common-1.5.0-py3-none-any.whl",
        "support.json",
    ]
    subprocess.run(["sha256sum", "--check", "--strict", "SHA256SUMS"], cwd=root, check=True, capture_output=True)


def test_index_is_deterministic(mirror_150):
    root = mirror_150 / "1.5.0"
    before = {p: (root / p).read_bytes() for p in ("manifest.json", "SHA256SUMS", "simple/perseus-common/index.html")}
    build_index("1.5.0", mirror_150)
    assert {p: (root / p).read_bytes() for p in before} == before


def test_links_encode_plus_and_carry_digests():
    page, text = project_page(
        "cpu",
        "perseus_torch",
        [
            IndexedFile(
                "perseus_torch", "cpu/perseus_torch-2.0.0+2.13.0-cp311-cp311-linux_x86_64.whl", "ab" * 32, ">=3.11"
            ),
        ],
    )
    assert page == "cpu/simple/perseus-torch/index.html"
    assert f'href="../../perseus_torch-2.0.0%2B2.13.0-cp311-cp311-linux_x86_64.whl#sha256={"ab" * 32}"' in text
    assert ">perseus_torch-2.0.0+2.13.0-cp311-cp311-linux_x86_64.whl</a>" in text
    assert 'data-requires-python="&gt;=3.11"' in text


def test_index_refuses_a_changed_or_missing_file(tmp_path, mirror_150):
    import shutil

    dist = tmp_path / "dist"
    shutil.copytree(mirror_150, dist)
    wheel = dist / "1.5.0" / "perseus_common-1.5.0-py3-none-any.whl"
    wheel.write_bytes(wheel.read_bytes() + b"\0")
    with pytest.raises(BuildError, match="changed since it was built"):
        build_index("1.5.0", dist)
    wheel.unlink()
    with pytest.raises(BuildError, match="missing"):
        build_index("1.5.0", dist)


def test_index_without_a_build_says_what_to_run(tmp_path):
    with pytest.raises(ConfigurationError, match="aiacc-build build --release 9.9.9"):
        build_index("9.9.9", tmp_path)


def test_earlier_built_cells_survive_only_while_their_file_is_unchanged(tmp_path, mirror_150):
    import shutil

    dist = tmp_path / "dist"
    shutil.copytree(mirror_150, dist)
    record = load_record("1.5.0", dist)
    assert record is not None
    # pretend an earlier run built one cell: its file exists with the recorded digest
    cell = record.cells[0]
    target = dist / "1.5.0" / cell.path
    target.parent.mkdir(parents=True)
    target.write_bytes(b"wheel bytes")
    from aiacc_build.hashing import file_sha256

    record.cells[0] = cell.model_copy(update={"status": "built", "sha256": file_sha256(target), "size": 11})
    save_record(record, dist)
    release = load_release("1.5.0")
    plan = plan_cells("1.5.0", release.cells, RegistryClient(tmp_path / "registry", offline=True))
    cache = BuildCache(shared_cache_dir())
    Builder(cache, dist).build(release.info, plan)
    assert load_record("1.5.0", dist).cells[0].status == "built"  # type: ignore[union-attr]
    target.write_bytes(b"other bytes")
    Builder(cache, dist).build(release.info, plan)
    assert load_record("1.5.0", dist).cells[0].status == "deferred"  # type: ignore[union-attr]


def _clean_pip_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull  # nothing but the served mirror (and the CA bundle) counts
    env["PIP_CERT"] = os.environ.get("PIP_CERT", "/etc/ssl/certs/ca-certificates.crt")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def test_served_root_index_installs_perseus_common_with_pip(tmp_path, mirror_150):
    with MirrorServer(mirror_150 / "1.5.0") as server:
        page = requests.get(f"{server.url}/simple/perseus-common/", timeout=10)
        assert page.status_code == 200 and "perseus_common-1.5.0-py3-none-any.whl#sha256=" in page.text
        assert requests.get(f"{server.url}/manifest.json", timeout=10).json()["release"] == "1.5.0"
        interpreter = find_interpreter("3.11")
        assert interpreter is not None
        cache = BuildCache(shared_cache_dir())
        env = create_venv(tmp_path / "venv", interpreter, cache)
        install(env, ["pip"], cache)
        py = env.python
        subprocess.run(
            [str(py), "-m", "pip", "install", "-q", "--index-url", f"{server.url}/simple/", "perseus-common==1.5.0"],
            check=True,
            env=_clean_pip_env(),
            capture_output=True,
            text=True,
        )
    out = subprocess.run(
        [str(py), "-c", "import perseus; print(perseus.__version__)"], check=True, capture_output=True, text=True
    )
    assert out.stdout.strip() == "1.5.0"


def test_server_binds_loopback_only(mirror_150):
    with MirrorServer(mirror_150 / "1.5.0") as server:
        assert server.httpd.server_address[0] == "127.0.0.1"


def test_index_writes_the_support_list_from_the_record(mirror_150):
    """Every status and count of the mirror's SUPPORT.md / support.json is the build record's."""
    root = mirror_150 / "1.5.0"
    record = load_record("1.5.0", mirror_150)
    assert record is not None
    support = json.loads((root / "support.json").read_text())
    statuses = {c.key: c.status for c in record.cells}
    assert {c["key"]: c["status"] for c in support["cells"]} == statuses
    built = sum(s == "built" for s in statuses.values())
    assert support["counts"] == {"built": built, "deferred": len(statuses) - built, "not built yet": 0}
    markdown = (root / "SUPPORT.md").read_text()
    assert f"{len(statuses)} cells: {built} built, {len(statuses) - built} deferred, 0 not built yet." in markdown
    assert "| built |" not in markdown  # nothing of 1.5.0 is buildable on this machine
