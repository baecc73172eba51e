"""Conan 2 recipe of the AIACC-Training (Perseus) native core: built once per (CUDA toolkit, compiler,
build type) into the local cache, then linked statically into every framework binding of that cell.

    conan create recipes/perseus-core --version 2.0.0 -o "&:cuda=13.0" --build=missing     # offline
    conan create recipes/perseus-core --version 2.0.0 -o "&:cuda=none"

The sources are exported from native/core of this checkout (no download, no remote). The nvcc used
is conf `user.perseus:nvcc` (default /usr/local/cuda/bin/nvcc), its toolkit the folder above its bin/,
and conf `user.perseus:cuda_host_compiler` names nvcc's host compiler when it must be explicit (a
toolkit provisioned by `aiacc-build toolkit fetch`); the nvcc's version must equal the `cuda` option, which is part of the package id together with the compiler settings and the architectures.
A binding consumes the package with -DPERSEUS_CORE_PREFIX=<package folder> (its CMake config file).
"""
import os
import re
import subprocess

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration
from conan.tools.cmake import CMake, CMakeToolchain, cmake_layout
from conan.tools.files import copy

CORE_DIR = os.path.join("..", "..", "native", "core")


class PerseusCoreConan(ConanFile):
    name = "perseus-core"
    description = "AIACC-Training native core: fp16/bf16 gradient compression, fusion, gossip (C ABI)"
    license = "Apache-2.0"
    package_type = "static-library"
    settings = "os", "arch", "compiler", "build_type"
    options = {
        "cuda": ["none", "ANY"],            # CUDA toolkit version, e.g. "13.0"
        "cuda_architectures": ["ANY"],      # "75-real;90", "full" (75..120) or a CMake list
        "fPIC": [True],
    }
    default_options = {"cuda": "none", "cuda_architectures": "75-real;90", "fPIC": True}

    def set_version(self):
        if not self.version and not os.environ.get("PERSEUS_RELEASE"):
            with open(os.path.join(self.recipe_folder, CORE_DIR, "..", "release", "DEFAULT_RELEASE")) as handle:
                self.version = handle.read().strip()  # the release rule of native/release/perseus_release.py
        self.version = self.version or os.environ["PERSEUS_RELEASE"]

    def export_sources(self):
        source = os.path.join(self.recipe_folder, CORE_DIR)
        if not os.path.isfile(os.path.join(source, "CMakeLists.txt")):
            raise ConanInvalidConfiguration("native/core not found next to the recipe (%s): export the recipe "
                                            "from the AIACC-Training repository checkout" % source)
        copy(self, "*", src=source, dst=self.export_sources_folder, excludes=["build*", "tests/*"])

    def package_id(self):
        if str(self.info.options.cuda) == "none":
            del self.info.options.cuda_architectures  # no device code: one package for every value

    def _nvcc(self):
        return self.conf.get("user.perseus:nvcc", default="/usr/local/cuda/bin/nvcc")

    def validate(self):
        if str(self.settings.compiler) not in ("gcc", "clang"):
            raise ConanInvalidConfiguration("perseus-core is built with gcc or clang, not %s" % self.settings.compiler)

    def layout(self):
        cmake_layout(self)

    def generate(self):
        toolchain = CMakeToolchain(self)
        toolchain.cache_variables["PERSEUS_RELEASE"] = str(self.version)
        toolchain.cache_variables["PERSEUS_BUILD_TESTS"] = False
        if str(self.options.cuda) == "none":
            toolchain.cache_variables["PERSEUS_WITH_CUDA"] = "OFF"
        else:
            nvcc = self._nvcc()
            found = self._nvcc_version(nvcc)
            if found != str(self.options.cuda):
                raise ConanInvalidConfiguration("option cuda=%s but %s is CUDA %s: point conf user.perseus:nvcc at "
                                                "the %s toolkit" % (self.options.cuda, nvcc, found, self.options.cuda))
            toolchain.cache_variables["PERSEUS_WITH_CUDA"] = "ON"
            toolchain.cache_variables["CMAKE_CUDA_COMPILER"] = nvcc
            # this toolkit's runtime and headers, never another one FindCUDAToolkit might find first
            toolchain.cache_variables["CUDAToolkit_ROOT"] = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
            host = self.conf.get("user.perseus:cuda_host_compiler")
            if host:
                toolchain.cache_variables["CMAKE_CUDA_HOST_COMPILER"] = host
            toolchain.cache_variables["PERSEUS_CUDA_ARCHITECTURES"] = str(self.options.cuda_architectures)
        toolchain.generate()

    @staticmethod
    def _nvcc_version(nvcc):
        try:
            out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError) as error:
            raise ConanInvalidConfiguration("cannot run nvcc at %s (%s): set conf user.perseus:nvcc" % (nvcc, error))
        match = re.search(r"release (\d+\.\d+)", out)
        if not match:
            raise ConanInvalidConfiguration("cannot read the CUDA version from `%s --version`" % nvcc)
        return match.group(1)

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        CMake(self).install()

    def package_info(self):
        # consumers use the package's own CMake config (perseus::core, with CUDA::cudart_static)
        self.cpp_info.set_property("cmake_find_mode", "none")
        self.cpp_info.builddirs = [os.path.join("lib", "cmake", "perseus_core")]
        self.cpp_info.libs = ["perseus_core"]
        if str(self.options.cuda) != "none":
            self.cpp_info.system_libs = ["pthread", "dl", "rt"]
