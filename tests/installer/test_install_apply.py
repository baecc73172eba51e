"""install_AIACC-Training.sh end to end, for real: the local cell built and indexed (tests/wheels), its
mirror served on 127.0.0.1 (HTTP, HTTPS with a private CA) or read from a folder, fresh venvs holding
the real torch 2.13.0+cpu. Every failure must leave `pip freeze` and the hash of every file of the
environment exactly as before."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from installer_kit import (
    CODE,
    copy_mirror,
    private_ca,
    python_venv,
    republish,
    reversioned_release,
    rewrite_wheel,
    run_script,
    snapshot,
    write_script,
)
from wheels_testkit import LOCAL_TORCH_FILE, check_torch_op

from aiacc_build import naming
from aiacc_build.index.serve import MirrorServer, tls_context
from aiacc_build.model import Framework

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


@pytest.fixture(scope="module")
def release(local_build):
    return local_build.release


@pytest.fixture(scope="module")
def script(release, tmp_path_factory) -> Path:
    return write_script(tmp_path_factory.mktemp("script"), release.info, release.cells)


@pytest.fixture(scope="module")
def served(local_build):
    with MirrorServer(local_build.root) as server:
        yield server


@pytest.fixture(scope="module")
def bare_env(local_build, tmp_path_factory):
    """torch alone; shared by the failure tests, which must leave it as it is."""
    return python_venv(tmp_path_factory.mktemp("bare") / "venv", local_build.cache_dir, LOCAL_TORCH_FILE)


@pytest.fixture
def torch_env(local_build, tmp_path):
    return python_venv(tmp_path / "venv", local_build.cache_dir, LOCAL_TORCH_FILE)


def _torch_files(snap) -> dict[str, str]:
    return {path: digest for path, digest in snap.files.items() if "/site-packages/torch" in path}


def _assert_untouched(before, env, result, code: int, *messages: str) -> None:
    assert result.returncode == code, result.stdout + result.stderr
    for message in messages:
        assert message in result.stderr, result.stderr
    assert snapshot(env).differences(before) == []


def test_install_runs_an_op_keeps_torch_then_rerun_and_uninstall(script, served, torch_env):
    before = snapshot(torch_env)
    result = run_script(script, "--mirror", served.url, str(torch_env.python))
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "decision:   torch -> cpu/perseus_torch-2.0.0+2.13.0-cp311-cp311-" in out
    assert f"wheel:      {served.url}/cpu/perseus_torch-2.0.0%2B2.13.0-cp311-cp311-" in out
    assert out.count("verified:   sha256 ") == 2  # perseus-common and perseus_torch
    # the wheel's own self-test (python -m perseus.torch._selftest 2.0.0 2.13.0)
    assert "check:      perseus 2.0.0, perseus.torch 2.0.0+2.13.0 (torch 2.13.0+cpu, dispatch " in out
    assert "compress fp32->fp16 x2.0 ok" in out
    assert "check:      perseus and perseusrun run" in out

    installed = snapshot(torch_env)
    assert _torch_files(installed) == _torch_files(before) and len(_torch_files(before)) > 1000
    changed = installed.differences(before)
    assert changed and [line for line in changed if "perseus" not in line] == []
    assert "compress fp32->fp16 x2.0 ok" in check_torch_op(torch_env.python, "2.0.0")
    for command in ("perseusrun", "perseus"):
        assert subprocess.run([str(torch_env.path / "bin" / command), "--help"], capture_output=True).returncode == 0
    doctor = subprocess.run([str(torch_env.path / "bin/perseus"), "doctor", "--json"], capture_output=True, text=True)
    assert '"perseus_torch"' in doctor.stdout or "perseus-torch" in doctor.stdout, doctor.stdout + doctor.stderr

    again = run_script(script, "--mirror", served.url, str(torch_env.python))
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.count("(up to date)") == 2 and "download:" not in again.stdout
    assert snapshot(torch_env).differences(installed) == []

    removed = run_script(script, "--uninstall", str(torch_env.python))
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert "removed:    perseus_torch 2.0.0+2.13.0" in removed.stdout and "removed:    perseus_common 2.0.0" in removed.stdout
    assert snapshot(torch_env).differences(before) == []
    nothing = run_script(script, "--uninstall", str(torch_env.python))
    assert nothing.returncode == 0 and "no AIACC-Training wheel is installed" in nothing.stdout


def test_offline_install_from_a_local_folder(script, local_build, torch_env):
    result = run_script(script, "--mirror", str(local_build.root), str(torch_env.python))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"wheel:      {local_build.root}/cpu/perseus_torch-2.0.0+2.13.0-" in result.stdout
    assert "compress fp32->fp16 x2.0 ok" in check_torch_op(torch_env.python, "2.0.0")


def _local_wheel(local_build) -> str:
    (built,) = [c for c in json.loads((local_build.root / "manifest.json").read_text())["cells"]
                if c["status"] == "built" and c["framework"] == "torch"]
    return built["path"]


@pytest.mark.parametrize("damage", ["tampered", "truncated"])
def test_damaged_wheel_is_refused_before_pip_runs(script, local_build, bare_env, tmp_path, damage):
    mirror = copy_mirror(local_build.root, tmp_path / "mirror")
    wheel = mirror / _local_wheel(local_build)
    data = bytearray(wheel.read_bytes())
    if damage == "tampered":
        data[len(data) // 2] ^= 0xFF
    else:
        data = data[: len(data) // 2]
    wheel.write_bytes(bytes(data))
    before = snapshot(bare_env)
    with MirrorServer(mirror) as server:
        result = run_script(script, "--mirror", server.url, str(bare_env.python))
    message = "tampered or damaged file" if damage == "tampered" else "truncated download or damaged mirror"
    _assert_untouched(before, bare_env, result, CODE["checksum"], message, "nothing was installed")


def test_unknown_framework_version(release, local_build, bare_env, tmp_path):
    """A release without torch 2.13.0 cells: its own mirror publishes none, so the script names none."""
    cells = [c for c in release.cells if not (c.framework is Framework("torch") and c.framework_version == "2.13.0")]
    script = write_script(tmp_path, release.info, cells)
    mirror = copy_mirror(local_build.root, tmp_path / "mirror")
    manifest = json.loads((mirror / "manifest.json").read_text())
    kept = {c.key for c in cells}
    manifest["cells"] = [c for c in manifest["cells"] if c["key"] in kept]
    (mirror / "manifest.json").write_text(json.dumps(manifest))
    before = snapshot(bare_env)
    result = run_script(script, "--mirror", str(mirror), str(bare_env.python))
    _assert_untouched(before, bare_env, result, CODE["unsupported"], "has no build for torch 2.13.0, CPU, Python 3.11")


def test_missing_framework(script, served, local_build, tmp_path):
    env = python_venv(tmp_path / "empty", local_build.cache_dir)
    before = snapshot(env)
    result = run_script(script, "--mirror", served.url, str(env.python))
    _assert_untouched(before, env, result, CODE["no_framework"], "no deep-learning framework is installed")


def test_mirror_down(script, bare_env):
    with MirrorServer(Path(script).parent) as server:
        url = server.url  # a port that answered a moment ago and is closed now
    before = snapshot(bare_env)
    result = run_script(script, "--mirror", url, str(bare_env.python))
    _assert_untouched(before, bare_env, result, CODE["network"], "after 3 attempts")
    assert result.stdout.count("retry:") == 2


def test_plain_http_mirror_on_another_host_is_refused(script, bare_env):
    before = snapshot(bare_env)
    result = run_script(script, "--mirror", "http://mirror.example.com/aiacc/2.0.0", str(bare_env.python))
    _assert_untouched(before, bare_env, result, CODE["untrusted_mirror"], "plain HTTP on a host that is not this machine")
    assert "--trusted-host" not in Path(script).read_text()


def test_manifest_of_another_build_is_an_error(script, local_build, bare_env, tmp_path):
    mirror = copy_mirror(local_build.root, tmp_path / "mirror")
    manifest = json.loads((mirror / "manifest.json").read_text())
    manifest["cells"] = manifest["cells"][1:]
    (mirror / "manifest.json").write_text(json.dumps(manifest))
    before = snapshot(bare_env)
    result = run_script(script, "--mirror", str(mirror), str(bare_env.python))
    _assert_untouched(before, bare_env, result, CODE["mirror_mismatch"], "disagree (1 differences)", "this script")


def test_folder_without_a_manifest_is_not_a_mirror(script, bare_env, tmp_path):
    before = snapshot(bare_env)
    result = run_script(script, "--mirror", str(tmp_path), str(bare_env.python))
    _assert_untouched(before, bare_env, result, CODE["mirror_mismatch"], "the mirror folder has no", "manifest.json")


def test_https_mirror_with_a_private_ca(script, local_build, bare_env, torch_env, tmp_path):
    ca, cert, key = private_ca(tmp_path / "pki")
    with MirrorServer(local_build.root, tls=tls_context(cert, key)) as server:
        assert server.url.startswith("https://127.0.0.1:")
        before = snapshot(bare_env)
        refused = run_script(script, "--mirror", server.url, str(bare_env.python))
        _assert_untouched(before, bare_env, refused, CODE["untrusted_mirror"], "could not be verified", "--ca-bundle")
        result = run_script(script, "--mirror", server.url, "--ca-bundle", str(ca), str(torch_env.python))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "compress fp32->fp16 x2.0 ok" in check_torch_op(torch_env.python, "2.0.0")


def _next_release_mirror(local_build, release, folder: Path, break_import: bool):
    """The local build republished as release 2.0.1 (same binaries); with break_import the torch wheel's
    build manifest names another torch, so its import fails as a wheel built for the wrong torch does."""
    info, cells = reversioned_release(release.info, release.cells, "2.0.1")
    mirror = copy_mirror(local_build.root, folder)
    manifest = json.loads((mirror / "manifest.json").read_text())
    new_by_old = {old.key: new for old, new in zip(release.cells, cells)}
    edits = {}
    for record in manifest["cells"]:
        # a built wheel keeps the platform tag its build proved (naming.wheel_filename's `platform`)
        platform = record["path"][: -len(".whl")].rsplit("-", 1)[1] if record["status"] == "built" else None
        new_path = naming.wheel_path(new_by_old[record["key"]], platform)
        if record["status"] == "built":
            edit = None
            if break_import and record["framework"] == "torch":
                name = "perseus/torch/build_manifest.json"
                build = json.loads(subprocess.run(["unzip", "-p", str(mirror / record["path"]), name], capture_output=True, check=True).stdout)
                edit = {name: json.dumps(dict(build, torch_version="2.12.0+cpu")).encode()}
            rewrite_wheel(mirror / record["path"], mirror / new_path, "2.0.0", "2.0.1", edit)
            edits[new_path] = mirror / new_path
        record.update(path=new_path, file=new_path.split("/")[-1])
    common_path = naming.common_wheel_path(info)
    rewrite_wheel(mirror / manifest["common"]["path"], mirror / common_path, "2.0.0", "2.0.1")
    manifest["common"].update(path=common_path, file=common_path, version="2.0.1")
    manifest["release"] = "2.0.1"
    (mirror / "manifest.json").write_text(json.dumps(manifest))
    republish(mirror, {**edits, common_path: mirror / common_path})
    return write_script(folder.parent / "script-2.0.1", info, cells), mirror


@pytest.mark.parametrize("works", [True, False], ids=["upgrade", "failed-upgrade"])
def test_upgrade_replaces_or_rolls_back(script, served, local_build, release, torch_env, tmp_path, works):
    assert run_script(script, "--mirror", served.url, str(torch_env.python)).returncode == 0
    installed = snapshot(torch_env)
    new_script, mirror = _next_release_mirror(local_build, release, tmp_path / "mirror-2.0.1", break_import=not works)
    result = run_script(new_script, "--mirror", str(mirror), str(torch_env.python))
    if works:
        assert result.returncode == 0, result.stdout + result.stderr
        assert "backup:     perseus_torch 2.0.0+2.13.0" in result.stdout
        freeze = snapshot(torch_env).freeze
        assert "perseus_torch==2.0.1+2.13.0" in freeze and "perseus-common==2.0.1" in freeze, [l for l in freeze if "perseus" in l]
        return
    _assert_untouched(installed, torch_env, result, CODE["install_failed"], "import perseus.torch failed",
                      "restored: perseus_common 2.0.0, perseus_torch 2.0.0+2.13.0")
    assert "compress fp32->fp16 x2.0 ok" in check_torch_op(torch_env.python, "2.0.0")
