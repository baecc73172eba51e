"""The install script and its mirror: the served copy defaults to where it is served from, `--dry-run`
reads the mirror's manifest (exit 9 when the mirror is down, 11 when the chosen wheel is not in it;
`--offline` alone skips it), suggestions name only what the mirror publishes, and no message names the
build tool. Real HTTP on 127.0.0.1, free ports only; the local cell built for real (tests/wheels)."""

from __future__ import annotations

import json
import shutil
import socket
import urllib.request
from pathlib import Path

import pytest
from installer_kit import CODE, python_venv, run_script, write_script
from wheels_testkit import LOCAL_TORCH_FILE

from aiacc_build import naming
from aiacc_build.cli import main
from aiacc_build.index.serve import MirrorServer
from aiacc_build.index.served import point_install_script

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

SEEN: list[str] = []  # every message the script printed in this module


def _run(script: Path, *args: str, env: dict[str, str] | None = None):
    result = run_script(script, *args, env=env)
    SEEN.append(result.stdout + result.stderr)
    return result


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def release(local_build):
    return local_build.release


@pytest.fixture(scope="module")
def torch_env(local_build, tmp_path_factory):
    return python_venv(tmp_path_factory.mktemp("torch") / "venv", local_build.cache_dir, LOCAL_TORCH_FILE)


@pytest.fixture(scope="module")
def served_copy(local_build, release, tmp_path_factory):
    """A copy of the indexed mirror, served, its install script pointed at the server (as `serve` does)."""
    root = tmp_path_factory.mktemp("served") / release.info.version
    shutil.copytree(local_build.root, root)
    with MirrorServer(root) as server:
        point_install_script(release, root, server.url)
        yield server, root


@pytest.fixture(scope="module")
def script(release, tmp_path_factory) -> Path:
    """The script as rendered from the release data (its default mirror is the vendor URL)."""
    return write_script(tmp_path_factory.mktemp("script"), release.info, release.cells)


def test_the_served_copy_defaults_to_its_server(served_copy, torch_env, tmp_path):
    server, root = served_copy
    downloaded = tmp_path / naming.INSTALL_SCRIPT_NAME
    with urllib.request.urlopen(f"{server.url}/{naming.INSTALL_SCRIPT_NAME}", timeout=10) as response:
        downloaded.write_bytes(response.read())
    assert f"(default {server.url})" in _run(downloaded, "--help").stdout
    result = _run(downloaded, "--dry-run", str(torch_env.python))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"mirror:     {server.url} (manifest of AIACC-Training 2.0.0 agrees with this script)" in result.stdout
    assert f"wheel:      {server.url}/cpu/perseus_torch-2.0.0%2B2.13.0-cp311-cp311-" in result.stdout
    sums = (root / naming.CHECKSUMS_FILENAME).read_text()
    import hashlib

    digest = hashlib.sha256(downloaded.read_bytes()).hexdigest()
    assert f"{digest}  {naming.INSTALL_SCRIPT_NAME}" in sums.splitlines()


def test_the_environment_and_the_option_override_the_default(served_copy, torch_env, tmp_path):
    server, root = served_copy
    down = f"http://127.0.0.1:{_closed_port()}"
    script = root / naming.INSTALL_SCRIPT_NAME
    by_env = _run(script, "--dry-run", str(torch_env.python), env={"AIACC_MIRROR_URL": down})
    assert by_env.returncode == CODE["network"] and down in by_env.stderr, by_env.stderr
    by_option = _run(script, "--dry-run", "--mirror", server.url, str(torch_env.python), env={"AIACC_MIRROR_URL": down})
    assert by_option.returncode == 0, by_option.stdout + by_option.stderr


def test_index_base_url_writes_the_default_mirror(local_build, release, tmp_path):
    dist = tmp_path / "dist"
    shutil.copytree(local_build.root.parent, dist)
    url = "https://mirror.example.com/perseus/2.0.0"
    assert main(["index", "--release", release.info.version, "--dist", str(dist), "--base-url", url + "/"]) == 0
    text = (dist / release.info.version / naming.INSTALL_SCRIPT_NAME).read_text()
    assert f'MIRROR_URL="${{AIACC_MIRROR_URL:-{url}}}"' in text
    before = (dist / release.info.version / naming.INSTALL_SCRIPT_NAME).read_bytes()
    assert main(["index", "--release", release.info.version, "--dist", str(dist), "--base-url", "ftp://x y"]) != 0
    assert (dist / release.info.version / naming.INSTALL_SCRIPT_NAME).read_bytes() == before  # refused, unchanged


def test_dry_run_against_a_mirror_that_is_down_exits_9(script, torch_env):
    down = f"http://127.0.0.1:{_closed_port()}"
    result = _run(script, "--dry-run", "--mirror", down, str(torch_env.python))
    assert result.returncode == CODE["network"], result.stdout + result.stderr
    assert "decision:" not in result.stdout  # nothing is decided from a mirror that cannot be read
    offline = _run(script, "--dry-run", "--offline", "--mirror", down, str(torch_env.python))
    assert offline.returncode == 0, offline.stdout + offline.stderr
    assert "offline: the mirror was not read" in offline.stdout
    assert _run(script, "--offline", "--mirror", down, str(torch_env.python)).returncode == CODE["usage"]


def test_dry_run_against_a_mirror_without_the_file_exits_11(local_build, script, torch_env, tmp_path):
    root = tmp_path / "mirror"
    shutil.copytree(local_build.root, root)
    manifest = json.loads((root / "manifest.json").read_text())
    for cell in manifest["cells"]:
        if cell["status"] == "built":
            cell.update(status="deferred", reason="framework not on local disk: build here with --cells")
    (root / "manifest.json").write_text(json.dumps(manifest))
    with MirrorServer(root) as server:
        result = _run(script, "--dry-run", "--mirror", server.url, str(torch_env.python))
    assert result.returncode == CODE["mirror_mismatch"], result.stdout + result.stderr
    assert "the mirror does not publish cpu/perseus_torch-2.0.0+2.13.0-cp311-cp311-" in result.stderr


def test_suggestions_name_only_published_cells(local_build, release, torch_env, tmp_path):
    """A script and mirror whose torch 2.13.0 CPU cells are not built: the other torch cells of the
    table (CUDA 13.0, ...) are not suggested, as this mirror publishes none of them."""
    recorded = json.loads((local_build.root / "manifest.json").read_text())["cells"]
    built = {c["path"] for c in recorded if c["status"] == "built"}
    cells = [c for c in release.cells if c.key not in {r["key"] for r in recorded if r["status"] == "built"}]
    root = tmp_path / "mirror"
    shutil.copytree(local_build.root, root)
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["cells"] = [c for c in manifest["cells"] if c["path"] not in built]
    (root / "manifest.json").write_text(json.dumps(manifest))
    script = write_script(tmp_path / "script", release.info, cells)
    with MirrorServer(root) as server:
        result = _run(script, "--dry-run", "--mirror", server.url, str(torch_env.python))
    assert result.returncode == CODE["unsupported"], result.stdout + result.stderr
    suggestions = result.stderr.split("nearest cells this mirror publishes:", 1)[1]
    assert suggestions.splitlines()[1].strip() == "(none)"
    assert "perseus_torch" not in suggestions


def test_no_message_names_the_build_tool(script):
    SEEN.append(_run(script, "--help").stdout)
    assert len(SEEN) >= 8
    for text in SEEN:
        assert "aiacc-build" not in text and "--cells" not in text, text
