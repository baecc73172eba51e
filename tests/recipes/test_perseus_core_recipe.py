"""Opt-in (AIACC_OPTIN=1, ~1-2 min): the conan recipe builds the core offline into a local cache, and
the torch binding builds against that package and loads."""
import os
import re
import shutil
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
RECIPE = os.path.join(REPO, "recipes", "perseus-core")
NVCC = "/usr/local/cuda/bin/nvcc"

pytestmark = [
    pytest.mark.optin,
]


def conan(conan_home, *args):
    env = dict(os.environ, CONAN_HOME=str(conan_home))
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return subprocess.run([sys.executable, "-m", "conans.conan"] + list(args), capture_output=True, text=True,
                          env=env, timeout=900)


def create(conan_home, cuda):
    result = conan(conan_home, "create", RECIPE, "--version", "1.5.0", "-o", "&:cuda=%s" % cuda, "--build=missing",
                   "-nr", "-c", "tools.cmake.cmaketoolchain:generator=Ninja")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    folder = re.search(r"Package folder (\S+)", result.stdout + result.stderr)
    assert folder, result.stderr[-2000:]
    return folder.group(1)


@pytest.fixture(scope="module")
def conan_home(tmp_path_factory):
    pytest.importorskip("conans", reason="conan 2 is a test dependency (pip install -e .[test])")
    home = tmp_path_factory.mktemp("conan_home")
    assert conan(home, "profile", "detect").returncode == 0
    return home


def test_cpu_package_builds_offline_and_a_binding_links_it(conan_home, tmp_path, torch):
    package = create(conan_home, "none")
    assert os.path.isfile(os.path.join(package, "lib", "libperseus_core.a"))
    assert os.path.isfile(os.path.join(package, "include", "perseus", "core.h"))
    build = tmp_path / "binding"
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    configure = subprocess.run(["cmake", "-S", os.path.join(REPO, "native", "bindings", "torch"), "-B", str(build),
                                "-G", "Ninja", "-DPython_EXECUTABLE=" + sys.executable,
                                "-DPERSEUS_CORE_PREFIX=" + package], capture_output=True, text=True, env=env)
    assert configure.returncode == 0, configure.stdout[-3000:] + configure.stderr[-3000:]
    built = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True, env=env)
    assert built.returncode == 0, built.stdout[-3000:]
    target = tmp_path / "pkg"
    target.mkdir()
    shutil.copy(str(build / "_perseus_ops.so"), str(target))
    shutil.copy(str(build / "build_manifest.json"), str(target))
    code = ("import sys\nfrom perseus.torch import _native\nops = _native.load(sys.argv[1])\n"
            "import torch\nh = torch.empty(3, dtype=torch.float16)\n"
            "print(int(ops.compress(torch.tensor([1.0, 1e30, 2.0]), h, 1.0)), h.tolist())\n")
    loaded = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True)
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    assert loaded.stdout.strip() == "1 [1.0, inf, 2.0]"


def test_cuda_package_checks_the_toolkit_version(conan_home):
    if not os.path.isfile(NVCC):
        pytest.skip("needs nvcc at %s" % NVCC)
    wrong = conan(conan_home, "create", RECIPE, "--version", "1.5.0", "-o", "&:cuda=11.0", "--build=missing", "-nr")
    assert wrong.returncode != 0
    assert "option cuda=11.0 but %s is CUDA" % NVCC in wrong.stdout + wrong.stderr
    version = re.search(r"release (\d+\.\d+)", subprocess.run([NVCC, "--version"], capture_output=True,
                                                               text=True).stdout).group(1)
    package = create(conan_home, version)
    assert os.path.isfile(os.path.join(package, "lib", "libperseus_core.a"))
    with open(os.path.join(package, "lib", "cmake", "perseus_core", "perseus_coreConfig.cmake")) as handle:
        assert "set(PERSEUS_CORE_HAS_CUDA ON)" in handle.read()
