"""perseus-mxnet-sync-bn.patch (recipes/mxnet/patches): what it adds, its translation units compiled against the
installed mxnet 1.9.1 wheel's headers (mxnet/include) and the engine's, and its operator's CPU kernels and
exchange run in real jobs against MXNet's own BatchNorm over the concatenated batch. The check that it applies
to apache/mxnet 1.9.1 itself is opt-in (it needs that source tree)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from test_mxnet_sync_bn import PYTHONPATH, check_against_reference, helpers, run_two_nodes_of_two

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

REPO_ROOT = Path(__file__).resolve().parents[2]
PATCH = REPO_ROOT / "recipes" / "mxnet" / "patches" / "perseus-mxnet-sync-bn.patch"
UPSTREAM = REPO_ROOT / "recipes" / "mxnet" / "upstream.txt"
DRIVER = Path(__file__).resolve().parent / "native" / "sync_bn_driver.cc"
WORKER = Path(__file__).resolve().parent / "workers" / "sync_bn_patch.py"
CONTRIB = "src/operator/contrib/"
NEW_FILES = ["perseus_sync_batch_norm-inl.h", "perseus_sync_batch_norm.cc", "perseus_sync_batch_norm.cu",
             "perseus_sync_batch_norm_comm.cc", "perseus_sync_batch_norm_comm.h"]
MODIFIED = ["CMakeLists.txt", "Makefile", "python/mxnet/gluon/contrib/nn/basic_layers.py"]
# as the pip wheel's libmxnet was built (pre-cxx11 std::string, no CUDA/MKL/CBLAS in these headers), C++11 as
# MXNet 1.9.1's Makefile compiles
DEFINES = ["-D_GLIBCXX_USE_CXX11_ABI=0", "-DMSHADOW_USE_CUDA=0", "-DMSHADOW_USE_MKL=0", "-DMSHADOW_USE_CBLAS=0",
           "-DDMLC_USE_GLOG=0", "-DDMLC_LOG_FATAL_THROW=1"]


def run(args, **kwargs):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, **kwargs)


@pytest.fixture(scope="module")
def patch_files(tmp_path_factory):
    """The patch's new files (the operator), applied into an empty folder."""
    folder = tmp_path_factory.mktemp("patch")
    proc = run(["git", "apply", "--include=" + CONTRIB + "*", str(PATCH)], cwd=str(folder))
    assert proc.returncode == 0, proc.stdout
    return folder


@pytest.fixture(scope="module")
def wheel(mxnet_python):
    """(include dir, libmxnet.so) of the installed mxnet wheel."""
    proc = run([mxnet_python, "-c", "import mxnet.libinfo as i; print(i.find_include_path()); print(i.find_lib_path()[0])"])
    assert proc.returncode == 0, proc.stdout
    include, library = proc.stdout.split()[-2:]
    assert Path(include, "mxnet", "c_api.h").is_file() and Path(include, "mshadow", "tensor.h").is_file()
    return include, library


def compile_args(wheel, patch_files, *extra):
    cxx = os.environ.get("CXX", "c++")
    return [cxx, "-std=c++11", "-fPIC", "-Wall", "-Wextra", "-Werror", *DEFINES, "-isystem", wheel[0],
            "-I", str(REPO_ROOT / "native" / "engine" / "include"), "-I", str(patch_files), *extra]


def nm(obj, *flags):
    return run(["nm", "-C", *flags, str(obj)]).stdout


def test_the_patch_adds_the_operator_and_its_build_glue(patch_files):
    numstat = run(["git", "apply", "--numstat", str(PATCH)]).stdout.split("\n")
    touched = sorted(line.split("\t")[2] for line in numstat if line)
    assert touched == sorted(MODIFIED + [CONTRIB + f for f in NEW_FILES])
    text = PATCH.read_text()
    assert "3f8f3be9987e259491ddc5a78aa9c6903e0b21e3" in text.split("diff --git")[0]  # the header names the commit
    assert 'option(USE_PERSEUS "' in text and "add_definitions(-DMXNET_USE_PERSEUS=1)" in text
    assert "ifeq ($(USE_PERSEUS), 1)" in text and "+class PerseusSyncBatchNorm(BatchNorm):" in text
    for name in NEW_FILES:
        source = (patch_files / CONTRIB / name).read_text()
        assert "Part of perseus-mxnet-sync-bn.patch" in source, name  # ours, not MXNet's
        # only the headers the wheel ships (and the patch's own): what lets CI compile it without MXNet's source
        assert not re.search(r'#include "\.\./', source), name


def added_block(path, start, end, ends=1):
    """The lines the patch adds to upstream `path`, from the one starting with `start` through the `ends`-th line
    equal to `end` after it, '+' removed."""
    section = PATCH.read_text().split("diff --git a/{0} b/{0}".format(path))[1].split("diff --git")[0]
    added = [line[1:] for line in section.splitlines() if line.startswith("+") and not line.startswith("+++")]
    first = next(i for i, line in enumerate(added) if line.startswith(start))
    last = [i for i in range(first + 1, len(added)) if added[i] == end][ends - 1]
    return added[first:last + 1]


def test_the_build_glue_needs_the_engine_header(tmp_path):
    """The patch's CMake and make blocks, run in a stand-in project: the header's folder and the define with
    USE_PERSEUS; without the header, a stop naming the option."""
    include = REPO_ROOT / "native" / "engine" / "include"
    (tmp_path / "a.cc").write_text("#include <perseus/engine.h>\nint f() { return PERSEUS_ENGINE_ABI_VERSION + MXNET_USE_PERSEUS; }\n")
    option = [line for line in added_block("CMakeLists.txt", "option(USE_PERSEUS", "endif()") if line.startswith("option(")]
    block = added_block("CMakeLists.txt", "if(USE_PERSEUS)", "endif()")
    (tmp_path / "CMakeLists.txt").write_text("\n".join(["cmake_minimum_required(VERSION 3.13)", "project(stand_in CXX)",
                                                         *option, "add_library(mxnet SHARED a.cc)", *block]) + "\n")
    ok = run(["cmake", "-S", str(tmp_path), "-B", str(tmp_path / "on"), "-DUSE_PERSEUS=ON",
              "-DPERSEUS_INCLUDE_DIR=" + str(include)])
    assert ok.returncode == 0, ok.stdout
    built = run(["cmake", "--build", str(tmp_path / "on")])
    assert built.returncode == 0, built.stdout  # the header found and MXNET_USE_PERSEUS defined
    missing = run(["cmake", "-S", str(tmp_path), "-B", str(tmp_path / "none"), "-DUSE_PERSEUS=ON"])
    assert missing.returncode != 0 and "set -DPERSEUS_INCLUDE_DIR" in " ".join(missing.stdout.split()), missing.stdout
    make_block = added_block("Makefile", "ifeq ($(USE_PERSEUS), 1)", "endif", ends=2)  # an ifeq inside an ifeq
    (tmp_path / "Makefile").write_text("\n".join(make_block) + "\nall:\n\t@echo CFLAGS=$(CFLAGS) LDFLAGS=$(LDFLAGS)\n")
    made = run(["make", "-s", "-C", str(tmp_path), "USE_PERSEUS=1", "PERSEUS_INCLUDE_DIR=" + str(include)])
    assert made.returncode == 0 and "-DMXNET_USE_PERSEUS=1 -isystem {}".format(include) in made.stdout, made.stdout
    refused = run(["make", "-s", "-C", str(tmp_path), "USE_PERSEUS=1", "PERSEUS_INCLUDE_DIR=" + str(tmp_path)])
    assert refused.returncode != 0 and "no perseus/engine.h under PERSEUS_INCLUDE_DIR" in refused.stdout
    assert "MXNET_USE_PERSEUS" not in run(["make", "-s", "-C", str(tmp_path)]).stdout  # off by default


def test_translation_units_compile_against_the_wheel_headers(patch_files, wheel, tmp_path):
    objects = {}
    for name in ("perseus_sync_batch_norm.cc", "perseus_sync_batch_norm_comm.cc"):
        obj = tmp_path / (name + ".o")
        proc = run(compile_args(wheel, patch_files, "-DMXNET_USE_PERSEUS=1", "-O1", "-c",
                                str(patch_files / CONTRIB / name), "-o", str(obj)))
        assert proc.returncode == 0, proc.stdout[-4000:]
        objects[name] = obj
        # an MXNet configured without USE_PERSEUS compiles the files to nothing
        empty = tmp_path / (name + ".off.o")
        assert run(compile_args(wheel, patch_files, "-c", str(patch_files / CONTRIB / name), "-o", str(empty))).returncode == 0
        assert nm(empty, "--defined-only").strip() == ""
    operator = objects["perseus_sync_batch_norm.cc"]
    raw = operator.read_bytes()
    assert b"_contrib_PerseusSyncBatchNorm\0" in raw and b"_backward_contrib_PerseusSyncBatchNorm\0" in raw
    assert b"comm_scope" in raw  # the parameter's field, listed in the operator's arguments
    undefined = nm(operator, "--undefined-only")
    assert "mxnet::op::perseus_sbn::ScopeSum" in undefined and "dmlc::Registry<nnvm::Op>::Get()" in undefined
    comm = nm(objects["perseus_sync_batch_norm_comm.cc"])
    assert re.search(r" T mxnet::op::perseus_sbn::ScopeSum\(", comm), comm
    for symbol in ("dl_iterate_phdr", "dlopen", "dlsym"):
        assert re.search(r" U {}\b".format(symbol), comm), symbol


def test_perseus_mxnet_provides_what_the_operator_resolves(mxnet_python, patch_files):
    wanted = re.findall(r'Resolve\(library, path, "(\w+)"', (patch_files / CONTRIB / "perseus_sync_batch_norm_comm.cc").read_text())
    assert "perseus_mxnet_engine" in wanted and "perseus_engine_allgather" in wanted
    code = ("import ctypes, os, perseus.mxnet as hvd\n"
            "from perseus.mxnet import _native\n"
            "lib = _native.load()\n"
            "print('MISSING', [s for s in {!r} if not hasattr(lib, s)])\n"
            "print('BEFORE', lib.perseus_mxnet_engine())\n"
            "hvd.init(); print('DURING', lib.perseus_mxnet_engine() is not None)\n"
            "hvd.shutdown(); print('AFTER', lib.perseus_mxnet_engine())\n"
            "print('HEADER', os.path.join(_native.package_dir(), 'include', 'perseus', 'engine.h'))\n").format(wanted)
    out = run([mxnet_python, "-c", code], env=dict(os.environ, PYTHONPATH=PYTHONPATH), timeout=120).stdout
    assert "MISSING []" in out and "BEFORE None" in out and "DURING True" in out and "AFTER None" in out, out
    header = Path(out.split("HEADER ")[1].split()[0])  # what -DPERSEUS_INCLUDE_DIR points a source build at
    assert header.read_bytes() == (REPO_ROOT / "native" / "engine" / "include" / "perseus" / "engine.h").read_bytes()


@pytest.fixture(scope="module")
def driver(patch_files, wheel, tmp_path_factory):
    """tests/mxnet/native/sync_bn_driver.cc + the patch's exchange, linked to the wheel's libmxnet."""
    library = tmp_path_factory.mktemp("driver") / "libsync_bn_driver.so"
    lib_dir = str(Path(wheel[1]).parent)
    proc = run(compile_args(wheel, patch_files, "-DMXNET_USE_PERSEUS=1", "-O1", "-shared", "-o", str(library),
                            str(DRIVER), str(patch_files / CONTRIB / "perseus_sync_batch_norm_comm.cc"),
                            "-L" + lib_dir, "-l:libmxnet.so", "-Wl,-rpath," + lib_dir, "-ldl"))
    assert proc.returncode == 0, proc.stdout[-4000:]
    return library


def reports_of(outputs):
    decoder = json.JSONDecoder()  # perseusrun tags its ranks' lines ("[1]<stdout>:REPORT ..."), Popen does not
    reports = sorted((decoder.raw_decode(line.split("REPORT ", 1)[1])[0] for out in outputs
                      for line in out.splitlines() if "REPORT " in line), key=lambda r: r["rank"])
    for r in reports:  # called before perseus.mxnet.init(): the operator says what to do
        assert "perseus.mxnet is not initialised: `import perseus.mxnet as hvd; hvd.init()`" in r["before_init"]
        r["hybrid"] = r["imperative"] = r["native"]  # check_against_reference's two modes: one here
    return reports


def test_the_operator_global_scope_two_ranks(mxnet_python, driver):
    master, perseus = helpers.free_ports(2)
    env = helpers.base_env("", {"MASTER_PORT": str(master), "PERSEUS_MASTER_PORT": str(perseus)})
    env.pop("PERSEUS_ENGINE_LIBRARY")
    env["PYTHONPATH"] = PYTHONPATH
    proc = subprocess.run([helpers.PERSEUSRUN, "-np", "2", "--", mxnet_python, str(WORKER), str(driver), "1"], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    reports = reports_of([proc.stdout])
    assert [(r["rank"], r["batch"]) for r in reports] == [(0, 3), (1, 5)]
    check_against_reference(reports, lambda r: 0)


def test_the_operator_node_scope_two_nodes_of_two_ranks(mxnet_python, driver):
    outputs = run_two_nodes_of_two(mxnet_python, [str(WORKER), str(driver), "0"])
    reports = reports_of([out for out, _ in outputs])
    assert [r["node"] for r in reports] == [0, 0, 1, 1]
    check_against_reference(reports, lambda r: r["node"])
    assert not np.allclose(reports[0]["native"]["moving_mean"], reports[2]["native"]["moving_mean"])


def upstream_pins():
    """recipes/mxnet/upstream.txt: ({"commit": ..., "tree": ...}, {path: git blob id of the files the patch modifies})."""
    pins, blobs = {}, {}
    for line in UPSTREAM.read_text().splitlines():
        if line and not line.startswith("#"):
            first, second = line.split()
            if first in ("commit", "tree"):
                pins[first] = second
            else:
                blobs[second] = first
    return pins, blobs


@pytest.mark.optin("needs an apache/mxnet 1.9.1 source tree: AIACC_MXNET_SOURCE, else a shallow git clone")
def test_the_patch_applies_to_apache_mxnet_1_9_1(tmp_path):
    pins, blobs = upstream_pins()
    source = os.environ.get("AIACC_MXNET_SOURCE")
    if not source:
        source = str(REPO_ROOT / ".cache" / "mxnet" / "source-1.9.1")
        if not Path(source, ".git").exists():
            proc = run(["git", "clone", "-q", "--depth", "1", "--branch", "1.9.1", "https://github.com/apache/mxnet",
                        source])
            assert proc.returncode == 0, "cloning apache/mxnet 1.9.1 failed (set AIACC_MXNET_SOURCE to a checkout " \
                                         "of tag 1.9.1):\n" + proc.stdout
    head = subprocess.run(["git", "-C", source, "rev-parse", "--show-toplevel", "HEAD"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, universal_newlines=True).stdout.split()
    if head and Path(head[0]).resolve() == Path(source).resolve():  # a checkout: the pinned commit
        head = head[1]
        assert head == pins["commit"], "{} is at {}, not apache/mxnet 1.9.1 {}".format(source, head, pins["commit"])
    for path, blob in blobs.items():  # a checkout or an unpacked tarball: the files the patch modifies are 1.9.1's
        assert run(["git", "hash-object", str(Path(source, path))]).stdout.strip() == blob, path
    checked = run(["git", "apply", "--check", "-v", str(PATCH)], cwd=source)
    assert checked.returncode == 0, checked.stdout
    dry = subprocess.run(["patch", "-p1", "--dry-run", "-i", str(PATCH)], cwd=source, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, universal_newlines=True)
    assert dry.returncode == 0 and "FAILED" not in dry.stdout, dry.stdout
