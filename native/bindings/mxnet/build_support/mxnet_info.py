"""What the perseus_mxnet build needs to know about the mxnet it builds against, without importing it.

The mxnet package is located with importlib (or PERSEUS_MXNET_DIR) and read from its files:
libinfo.py (__version__), include/ (the headers the library compiles against, shipped in the wheel)
and the distribution's name (mxnet-cu112: CUDA 11.2; mxnet, mxnet-mkl, mxnet-native: CPU). Not
importing mxnet lets one build interpreter build for an mxnet installed for another Python.
Environment overrides:
  PERSEUS_MXNET_DIR        the mxnet package directory (.../site-packages/mxnet)
  PERSEUS_RELEASE          the perseus release (default: native/release/DEFAULT_RELEASE)

  python mxnet_info.py [--json | --cmake FILE]
"""
import ast
import glob
import importlib.util
import json
import os
import re
import sys

_CUDA_DISTRIBUTION = re.compile(r"^mxnet[-_]cu(\d+)(?:mkl)?-", re.IGNORECASE)


class MxnetNotFound(RuntimeError):
    pass


def mxnet_dir():
    explicit = os.environ.get("PERSEUS_MXNET_DIR")
    if explicit:
        if not os.path.isfile(os.path.join(explicit, "libinfo.py")):
            raise MxnetNotFound("PERSEUS_MXNET_DIR=%s: no mxnet/libinfo.py there; point it at the mxnet "
                                "package directory (.../site-packages/mxnet)" % explicit)
        return os.path.abspath(explicit)
    spec = importlib.util.find_spec("mxnet")
    if spec is None or not spec.submodule_search_locations:
        raise MxnetNotFound("mxnet is not installed for %s: install the mxnet build to compile for (e.g. "
                            "pip install mxnet==1.9.1 'numpy<1.24'), then build with --no-build-isolation, "
                            "or set PERSEUS_MXNET_DIR" % sys.executable)
    return os.path.abspath(list(spec.submodule_search_locations)[0])


def _version(directory):
    with open(os.path.join(directory, "libinfo.py")) as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets):
            return ast.literal_eval(node.value)
    raise MxnetNotFound("%s/libinfo.py has no __version__" % directory)


def cuda_of_distribution(dist_info_name):
    """'mxnet_cu112-1.9.1.dist-info' -> '11.2'; a CPU distribution -> None."""
    match = _CUDA_DISTRIBUTION.match(dist_info_name)
    if match is None:
        return None
    digits = match.group(1)
    return "%s.%s" % (digits[:-1], digits[-1])


def _cuda(directory, version):
    site = os.path.dirname(directory)
    names = [os.path.basename(p) for p in glob.glob(os.path.join(site, "mxnet*-%s.dist-info" % version))]
    if len(names) != 1:
        raise MxnetNotFound("cannot tell which mxnet distribution installed %s (dist-info found: %s)"
                            % (directory, ", ".join(names) or "none"))
    return cuda_of_distribution(names[0])



def info():
    directory = mxnet_dir()
    include = os.path.join(directory, "include")
    if not os.path.isfile(os.path.join(include, "mxnet", "base.h")):
        raise MxnetNotFound("%s has no include/mxnet/base.h: this mxnet wheel ships no headers; install an "
                            "mxnet wheel of 1.6 or later (they ship mxnet/include)" % directory)
    version = _version(directory)
    return {
        "mxnet_dir": directory,
        "mxnet_include": include,
        "mxnet_version": version,
        "mxnet_public_version": version.split("+")[0],
        "mxnet_cuda": _cuda(directory, version),
    }


def _cmake_value(value):
    return "" if value is None else str(value)


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
    except MxnetNotFound as error:
        sys.stderr.write("perseus_mxnet build: %s\n" % error)
        sys.exit(2)
