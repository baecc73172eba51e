"""What the perseus_torch build needs to know about the torch it builds against, without importing it.

The torch package is located with importlib (or PERSEUS_TORCH_DIR), and read from its files:
version.py (version, CUDA), share/cmake/Torch/TorchConfig.cmake (C++ standard) and libc10.so
(C++ ABI: cxx11-ABI builds mangle std::string as std::__cxx11). Not importing torch lets one build
interpreter build for a torch installed for another Python. Environment overrides:
  PERSEUS_TORCH_DIR        the torch package directory (.../site-packages/torch)
  PERSEUS_RELEASE          the perseus release (default: native/release/DEFAULT_RELEASE)

  python torch_info.py [--json | --cmake FILE]
"""
import ast
import importlib.util
import json
import os
import re
import sys



class TorchNotFound(RuntimeError):
    pass


def torch_dir():
    explicit = os.environ.get("PERSEUS_TORCH_DIR")
    if explicit:
        if not os.path.isfile(os.path.join(explicit, "version.py")):
            raise TorchNotFound("PERSEUS_TORCH_DIR=%s: no torch/version.py there; point it at the torch "
                                "package directory (.../site-packages/torch)" % explicit)
        return os.path.abspath(explicit)
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise TorchNotFound("torch is not installed for %s: install the torch version to build for "
                            "(e.g. pip install torch==2.13.0), then build with --no-build-isolation, or "
                            "set PERSEUS_TORCH_DIR" % sys.executable)
    return os.path.abspath(list(spec.submodule_search_locations)[0])


def _version_py(directory):
    values = {}
    with open(os.path.join(directory, "version.py")) as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        targets = []
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for target in targets:
            if isinstance(target, ast.Name):
                try:
                    values[target.id] = ast.literal_eval(value)
                except ValueError:
                    pass
    return values


def _cxx_standard(directory):
    config = os.path.join(directory, "share", "cmake", "Torch", "TorchConfig.cmake")
    if os.path.isfile(config):
        with open(config) as handle:
            match = re.search(r"CXX_STANDARD\s+(\d+)", handle.read())
        if match:
            return max(17, int(match.group(1)))  # the core itself is C++17
    return 17


def _cxx11_abi(directory):
    # TorchConfig.cmake states the ABI of pre-cxx11 builds; libc10.so of torch 1.8 holds
    # std::__cxx11 names of the statically linked libstdc++ parts even though it is pre-cxx11
    config = os.path.join(directory, "share", "cmake", "Torch", "TorchConfig.cmake")
    if os.path.isfile(config):
        with open(config) as handle:
            match = re.search(r"-D_GLIBCXX_USE_CXX11_ABI=([01])", handle.read())
        if match:
            return match.group(1) == "1"
    lib = os.path.join(directory, "lib", "libc10.so")
    with open(lib, "rb") as handle:
        return b"__cxx11" in handle.read()



def info():
    directory = torch_dir()
    version_values = _version_py(directory)
    version = version_values.get("__version__")
    if not version:
        raise TorchNotFound("%s/version.py has no __version__" % directory)
    return {
        "torch_dir": directory,
        "torch_version": version,
        "torch_public_version": version.split("+")[0],
        "torch_cuda": version_values.get("cuda"),
        "cxx11_abi": _cxx11_abi(directory),
        "cxx_standard": _cxx_standard(directory),
    }


def _cmake_value(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    return str(value)


def main(argv):
    data = info()
    if len(argv) >= 3 and argv[1] == "--cmake":
        with open(argv[2], "w") as handle:
            for key, value in sorted(data.items()):
                handle.write('set(PERSEUS_%s "%s")\n' % (key.upper(), _cmake_value(value)))
        return 0
    json.dump(data, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except TorchNotFound as error:
        sys.stderr.write("perseus_torch build: %s\n" % error)
        sys.exit(2)
