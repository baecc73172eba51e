"""Provisioned CUDA toolkits (src/aiacc_build/toolkits/): the archive's indexes, the checks, the extraction.

CI-cheap: recorded real index data (tests/toolkits/data/debian-trixie/), .deb files built here with the
real dpkg-deb, a local HTTP server. The real 1 GB fetch, the toolkit's nvcc and CMake's view of it are
opt-in (AIACC_OPTIN=1): they reuse the toolkit in the build cache when it is there and intact.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import http.server
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from aiacc_build import toolkits
from aiacc_build.toolkits import (
    CUDA_12_4,
    DEFAULT_KEYRING,
    Archive,
    ArchiveError,
    DebPackage,
    IndexEntry,
    Placed,
    Placement,
    ToolkitHostError,
    UnknownToolkitError,
    extract_placements,
    host_compiler_problem,
    integrity_problems,
    parse_packages,
    parse_release,
    resolve_packages,
    toolkit_spec,
    unsigned_payload,
    verify_signature,
)

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

DATA = Path(__file__).parent / "data" / "debian-trixie"
NON_FREE = "non-free/binary-amd64/Packages"
MAIN_ALL = "main/binary-all/Packages"
needs_gpgv = pytest.mark.skipif(
    shutil.which("gpgv") is None or not DEFAULT_KEYRING.is_file(), reason="needs gpgv and debian-archive-keyring"
)
needs_dpkg_deb = pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb")
optin = pytest.mark.optin("~1 GB")


def recorded_indexes() -> dict[str, dict[str, list[DebPackage]]]:
    return {
        NON_FREE: parse_packages((DATA / "non-free_binary-amd64_Packages").read_text()),
        MAIN_ALL: parse_packages((DATA / "main_binary-all_Packages").read_text()),
    }


# ---- the signed Release --------------------------------------------------------------------------


@needs_gpgv
def test_recorded_inrelease_verifies_against_debians_keyring():
    text = verify_signature((DATA / "InRelease").read_bytes(), DEFAULT_KEYRING)
    release = parse_release(text)
    assert release.codename == "trixie" and release.acquire_by_hash
    # the spec's indexes are listed, with the hashes the fetch checks the downloads against
    for path in CUDA_12_4.index_paths:
        entry = release.files[path + ".xz"]
        assert len(entry.sha256) == 64 and entry.size > 0
    assert release.files[NON_FREE + ".xz"] == IndexEntry(
        "873a1152a9641bbbd32ae06d9bea40c0eb9486caeea340a786d4ab84cb6de6c5", 100252
    )
    # the dearmoring of --no-signature-check reads the same text gpgv vouches for
    assert parse_release(unsigned_payload((DATA / "InRelease").read_bytes())).files == release.files


@needs_gpgv
def test_a_tampered_inrelease_is_refused():
    data = (DATA / "InRelease").read_bytes()
    good = b"873a1152a9641bbbd32ae06d9bea40c0eb9486caeea340a786d4ab84cb6de6c5"
    assert good in data
    with pytest.raises(ArchiveError, match="signature does not verify"):
        verify_signature(data.replace(good, b"0" * 64, 1), DEFAULT_KEYRING)


@needs_gpgv
def test_a_keyring_without_the_suites_key_is_refused(tmp_path):
    other = Path("/usr/share/keyrings/debian-archive-bullseye-stable.gpg")
    if not other.is_file():
        pytest.skip("no bullseye keyring here")
    with pytest.raises(ArchiveError, match="does not verify"):
        verify_signature((DATA / "InRelease").read_bytes(), other)
    with pytest.raises(ToolkitHostError, match="debian-archive-keyring"):
        verify_signature((DATA / "InRelease").read_bytes(), tmp_path / "missing.gpg")


def test_release_without_sha256_is_an_archive_error():
    with pytest.raises(ArchiveError, match="no SHA256"):
        parse_release("Origin: Debian\nCodename: trixie\n")


# ---- the Packages indexes and the choice of packages ------------------------------------------------


def test_recorded_indexes_resolve_to_one_consistent_toolkit():
    packages = resolve_packages(CUDA_12_4, recorded_indexes())
    assert [p.name for p in packages] == [p.name for p in CUDA_12_4.packages]
    by_name = {p.name: p for p in packages}
    assert by_name["nvidia-cuda-toolkit"].version == "12.4.131~12.4.1-2"
    assert by_name["nvidia-cuda-dev"].version == by_name["libcudart12"].version == "12.4.127~12.4.1-2"
    assert by_name["libcu++-dev"].source == "cccl" and by_name["libcu++-dev"].version == "2.3.2-2"
    assert by_name["nvidia-cuda-dev"].size == 933853452
    assert by_name["nvidia-cuda-dev"].filename.startswith("pool/non-free/n/nvidia-cuda-toolkit/")
    assert "libnvvm4" not in by_name  # recorded, but cicc needs no libnvvm: not fetched


def test_only_the_named_stanzas_are_parsed():
    text = (DATA / "non-free_binary-amd64_Packages").read_text()
    assert set(parse_packages(text, {"libcudart12"})) == {"libcudart12"}
    assert set(parse_packages(text)) == {"nvidia-cuda-toolkit", "nvidia-cuda-dev", "libcudart12", "libnvvm4"}


def _replace(indexes, index, name, **changes):
    (pkg,) = indexes[index][name]
    indexes[index][name] = [dataclasses.replace(pkg, **changes)]
    return indexes


def test_a_toolkit_package_of_another_cuda_is_refused():
    indexes = _replace(recorded_indexes(), NON_FREE, "nvidia-cuda-toolkit", version="12.5.40~12.5.0-1")
    with pytest.raises(ArchiveError, match="not CUDA 12.4: the suite moved on"):
        resolve_packages(CUDA_12_4, indexes)


def test_packages_of_two_uploads_are_refused():
    indexes = _replace(recorded_indexes(), NON_FREE, "libcudart12", version="12.4.99~12.4.1-1")
    with pytest.raises(ArchiveError, match=r"requires libcudart12 \(= 12.4.127~12.4.1-2\)"):
        resolve_packages(CUDA_12_4, indexes)
    # a lower bound on the CCCL headers (nvidia-cuda-dev: libcu++-dev (>= 2.3.2~))
    indexes = _replace(recorded_indexes(), MAIN_ALL, "libcu++-dev", version="2.2.0-1")
    with pytest.raises(ArchiveError, match=r"libcu\+\+-dev \(>= 2.3.2~\)"):
        resolve_packages(CUDA_12_4, indexes)


def test_a_missing_package_is_named():
    indexes = recorded_indexes()
    del indexes[MAIN_ALL]["libthrust-dev"]
    with pytest.raises(ArchiveError, match="main/binary-all/Packages has no package libthrust-dev"):
        resolve_packages(CUDA_12_4, indexes)


def test_unknown_cuda_names_what_is_known():
    with pytest.raises(UnknownToolkitError, match="known: 11.8, 12.4"):
        toolkit_spec("12.5")


# ---- placements and extraction -----------------------------------------------------------------------


def test_placement_maps_folders_and_globs():
    folder = Placement("p", "usr/include/", "include/")
    assert folder.destination("usr/include/cuda/std/version") == "include/cuda/std/version"
    assert folder.destination("usr/include/") is None and folder.destination("usr/share/x") is None
    glob = Placement("p", "usr/lib/x86_64-linux-gnu/libcudart.so.12*", "lib64/")
    assert glob.destination("usr/lib/x86_64-linux-gnu/libcudart.so.12.4.127") == "lib64/libcudart.so.12.4.127"
    assert glob.destination("usr/lib/x86_64-linux-gnu/libcudart.so") is None
    exact = Placement("p", "usr/lib/nvidia-cuda-toolkit/bin/cicc", "nvvm/bin/")
    assert exact.destination("usr/lib/nvidia-cuda-toolkit/bin/cicc") == "nvvm/bin/cicc"


@pytest.mark.parametrize("spec", list(toolkits.TOOLKITS.values()), ids=lambda s: s.cuda)
def test_every_spec_placement_reads_a_fetched_package(spec):
    names = {p.name for p in spec.packages}
    assert {p.package for p in spec.placements} == names  # nothing fetched for nothing


def _deb(tmp_path: Path, name: str, files: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    """A real .deb, built with dpkg-deb from a small tree."""
    root = tmp_path / f"{name}-root"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        f"Package: {name}\nVersion: 1.0\nArchitecture: all\nMaintainer: test <t@example.org>\nDescription: test\n"
    )
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        (root / rel).chmod(0o755 if rel.startswith("usr/bin/") else 0o644)
    for rel, target in (links or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).symlink_to(target)
    deb = tmp_path / f"{name}.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zxz", "--build", str(root), str(deb)], check=True, capture_output=True)
    return deb


@needs_dpkg_deb
def test_extraction_writes_only_the_placed_members(tmp_path):
    deb = _deb(
        tmp_path,
        "demo",
        {
            "usr/include/a.h": b"#define A 1\n",
            "usr/include/sub/b.h": b"#define B 2\n",
            "usr/lib/x86_64-linux-gnu/libx.so.1.2": b"\x7fELF not really",
            "usr/bin/tool": b"#!/bin/sh\necho tool\n",
            "usr/share/doc/demo/copyright": b"text",
        },
        links={"usr/lib/x86_64-linux-gnu/libx.so.1": "libx.so.1.2"},
    )
    placements = (
        Placement("demo", "usr/include/", "include/"),
        Placement("demo", "usr/lib/x86_64-linux-gnu/libx.so*", "lib64/"),
        Placement("demo", "usr/bin/tool", "bin/"),
    )
    out, placed = tmp_path / "out", Placed()
    extract_placements(deb, placements, out, placed)
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if not p.is_dir())
    assert files == ["bin/tool", "include/a.h", "include/sub/b.h", "lib64/libx.so.1", "lib64/libx.so.1.2"]
    assert placed.files["include/a.h"] == hashlib.sha256(b"#define A 1\n").hexdigest()
    assert placed.symlinks == {"lib64/libx.so.1": "libx.so.1.2"}
    assert os.readlink(out / "lib64/libx.so.1") == "libx.so.1.2"
    assert os.access(out / "bin/tool", os.X_OK) and not os.access(out / "include/a.h", os.X_OK)


@needs_dpkg_deb
def test_a_placement_that_matches_nothing_fails_loudly(tmp_path):
    deb = _deb(tmp_path, "demo", {"usr/include/a.h": b"a"})
    with pytest.raises(ArchiveError, match="holds nothing at usr/lib/nvidia-cuda-toolkit/bin/nvcc"):
        extract_placements(deb, (Placement("demo", "usr/lib/nvidia-cuda-toolkit/bin/nvcc", "bin/"),), tmp_path / "o", Placed())


@needs_dpkg_deb
def test_a_link_out_of_its_folder_is_refused(tmp_path):
    deb = _deb(tmp_path, "demo", {"usr/include/a.h": b"a"}, links={"usr/include/b.h": "../share/b.h"})
    with pytest.raises(ArchiveError, match="outside its folder"):
        extract_placements(deb, (Placement("demo", "usr/include/", "include/"),), tmp_path / "o", Placed())


def test_a_damaged_layout_is_reported(tmp_path):
    assert integrity_problems(tmp_path) == [f"no readable toolkit.json in {tmp_path}"]
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "a.h").write_text("a")
    (tmp_path / "toolkit.json").write_text(
        '{"format": 1, "nvcc_version": "12.4.131", "files": {"include/a.h": "%s", "bin/nvcc": "00"}, '
        '"symlinks": {"lib64/libcudart.so": "libcudart.so.12"}}' % hashlib.sha256(b"b").hexdigest()
    )
    problems = integrity_problems(tmp_path)
    assert "changed include/a.h" in problems and "missing bin/nvcc" in problems
    assert "link lib64/libcudart.so is not -> libcudart.so.12" in problems
    assert any("nvcc.profile" in p for p in problems)


# ---- downloads -------------------------------------------------------------------------------------


@pytest.fixture
def http_root(tmp_path):
    root = tmp_path / "mirror"
    root.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a, **k: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_download_checks_size_and_sha256(http_root, tmp_path):
    root, url = http_root
    data = os.urandom(3 * toolkits.CHUNK + 17)
    (root / "pool").mkdir()
    (root / "pool" / "x.deb").write_bytes(data)
    archive, dest = Archive(mirror=url), tmp_path / "dl" / "x.deb"
    seen: list[tuple[int, int]] = []
    entry = IndexEntry(hashlib.sha256(data).hexdigest(), len(data))
    assert archive.download("pool/x.deb", dest, entry, "x", lambda _l, d, t: seen.append((d, t)))
    assert dest.read_bytes() == data and seen[-1] == (len(data), len(data))
    assert not archive.download("pool/x.deb", dest, entry, "x", None)  # already there: not fetched again
    dest.unlink()
    with pytest.raises(ArchiveError, match="corrupted or tampered"):
        archive.download("pool/x.deb", dest, IndexEntry("0" * 64, len(data)), "x", None)
    assert not dest.exists() and not list(dest.parent.glob("*.part"))
    with pytest.raises(ArchiveError, match="HTTP 404"):
        archive.download("pool/missing.deb", dest, entry, "x", None)


def test_unreachable_mirror_is_an_archive_error():
    with pytest.raises(ArchiveError, match="cannot reach"):
        Archive(mirror="http://127.0.0.1:9").get("dists/trixie/InRelease")


# ---- the host compiler ----------------------------------------------------------------------------


def test_host_compiler_newer_than_nvcc_accepts_is_named():
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("no g++")
    major = int(subprocess.run([cxx, "-dumpversion"], capture_output=True, text=True).stdout.split(".")[0])
    assert host_compiler_problem(Path(cxx), major) is None
    problem = host_compiler_problem(Path(cxx), major - 1)
    assert problem and f"GCC {major}" in problem and f"CXX=g++-{major - 1}" in problem


# ---- opt-in: the real toolkit -------------------------------------------------------------------


@optin
def test_real_toolkit_fetch_compiles_and_is_found_by_cmake_and_the_toolchain(tmp_path):
    from aiacc_build.wheels.toolchain import cuda_compilers, detect_toolchain

    result = toolkits.fetch_toolkit("12.4")  # a no-op re-check when the cache holds it intact
    prefix = result.toolkit.prefix
    assert result.toolkit.nvcc_version.startswith("12.4.") and integrity_problems(prefix) == []
    assert "verified by gpgv" in result.toolkit.signature
    cuda_compilers.cache_clear()
    toolchain = detect_toolchain("12.4")
    assert toolchain.cuda is not None and toolchain.cuda.nvcc == (prefix / "bin" / "nvcc").resolve()
    assert toolchain.identity["nvcc"] == result.toolkit.nvcc_version and toolchain.cuda_host_compiler == toolchain.cxx
    project = tmp_path / "proj"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(p LANGUAGES CXX CUDA)\nfind_package(CUDAToolkit REQUIRED)\n"
        "set(CMAKE_CUDA_ARCHITECTURES 75)\nadd_executable(k k.cu)\ntarget_link_libraries(k CUDA::cudart_static)\n"
    )
    (project / "k.cu").write_text(toolkits.CHECK_KERNEL)
    build = tmp_path / "build"
    subprocess.run(
        ["cmake", "-S", str(project), "-B", str(build), "-G", "Ninja", f"-DCMAKE_CUDA_COMPILER={prefix}/bin/nvcc",
         f"-DCMAKE_CUDA_HOST_COMPILER={toolchain.cxx}", f"-DCUDAToolkit_ROOT={prefix}"],
        check=True, capture_output=True,
    )  # fmt: skip
    cache = (build / "CMakeCache.txt").read_text()
    assert f"CUDA_cudart_static_LIBRARY:FILEPATH={prefix}/lib64/libcudart_static.a" in cache
    subprocess.run(["cmake", "--build", str(build), "-j2"], check=True, capture_output=True)
    listing = subprocess.run([str(prefix / "bin" / "cuobjdump"), "--list-elf", str(build / "k")], capture_output=True, text=True)
    assert "sm_75" in listing.stdout


# ---- the command line ---------------------------------------------------------------------------


def test_cli_lists_the_recipes_and_refuses_an_unknown_cuda(tmp_path, monkeypatch, capsys):
    import json

    from aiacc_build.cli import main

    monkeypatch.setenv("AIACC_TOOLKITS_DIR", str(tmp_path / "toolkits"))
    assert main(["toolkit", "list", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["dir"] == str(tmp_path / "toolkits")
    rows = {row["cuda"]: row for row in listing["toolkits"]}
    assert sorted(rows) == ["11.8", "12.4"] and not any(row["installed"] for row in rows.values())
    assert "libcu++-dev" in rows["12.4"]["source"] and "bookworm" in rows["11.8"]["source"]
    assert main(["toolkit", "fetch", "12.5"]) == UnknownToolkitError.exit_code == 2
    assert "known: 11.8, 12.4" in capsys.readouterr().err
    # an unreachable mirror is a registry error (exit 5) and leaves no toolkit behind
    code = main(["toolkit", "fetch", "12.4", "--mirror", "http://127.0.0.1:9", "--no-signature-check", "--json"])
    assert code == ArchiveError.exit_code == 5
    assert not (tmp_path / "toolkits" / "cuda-12.4").exists()
