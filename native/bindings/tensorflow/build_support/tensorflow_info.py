"""What the perseus_tensorflow build needs to know about the TensorFlow it builds against.

TensorFlow states its own build flags (tf.sysconfig.get_compile_flags() / get_link_flags(): include
directory, _GLIBCXX_USE_CXX11_ABI, the C++ standard, libtensorflow_framework), so this script imports
it with the build interpreter; its CUDA comes from tf.sysconfig.get_build_info(). Environment:
  PERSEUS_RELEASE             the perseus release (default: native/release/DEFAULT_RELEASE)
  PERSEUS_TENSORFLOW_PYTHON   the interpreter whose TensorFlow to build for, when it is not the one
                              running the build backend (TensorFlow 1.15 lives on Python 3.6, which
                              scikit-build-core does not run on): this script re-runs itself there

  python tensorflow_info.py [--json | --cmake FILE]
"""
import json
import os
import re
import subprocess
import sys

PYTHON_ENV = "PERSEUS_TENSORFLOW_PYTHON"


class TensorflowNotFound(RuntimeError):
    pass


def _import_tensorflow():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import tensorflow as tf  # noqa: F401
    except ImportError as error:
        raise TensorflowNotFound(
            "tensorflow is not importable by %s (%s): install the TensorFlow build to compile for "
            "(e.g. pip install tensorflow-cpu==2.21.0), then build with --no-build-isolation"
            % (sys.executable, error))
    return tf


def parse_flags(compile_flags, link_flags):
    """The include directory, C++ ABI, C++ standard, other definitions, library directory and the
    framework library's file name, from tf.sysconfig's lists."""
    # TensorFlow 2.x names its C++ standard; 1.x names none and was built as C++11/14: C++14 then, never
    # 17, under which absl's string_view/optional would become std:: types TensorFlow's symbols lack
    include_dir, abi, standard, defines = None, None, 14, []
    for flag in compile_flags:
        if flag.startswith("-I"):
            include_dir = flag[2:]
        elif flag.startswith("-D_GLIBCXX_USE_CXX11_ABI="):
            abi = flag.split("=", 1)[1] == "1"
        elif re.match(r"^-?-std=c\+\+(\d+)$", flag):
            standard = max(14, int(re.match(r"^-?-std=c\+\+(\d+)$", flag).group(1)))
        elif flag.startswith("-D"):
            defines.append(flag[2:])
    lib_dir, lib_name = None, None
    for flag in link_flags:
        if flag.startswith("-L"):
            lib_dir = flag[2:]
        elif flag.startswith("-l:"):
            lib_name = flag[3:]
        elif flag.startswith("-l"):
            lib_name = "lib%s.so" % flag[2:]
    missing = [n for n, v in (("-I", include_dir), ("-D_GLIBCXX_USE_CXX11_ABI", abi), ("-L", lib_dir),
                              ("-l", lib_name)) if v is None]
    if missing:
        raise TensorflowNotFound("tf.sysconfig flags lack %s: compile %s, link %s"
                                 % (", ".join(missing), compile_flags, link_flags))
    return {"include_dir": include_dir, "cxx11_abi": abi, "cxx_standard": standard,
            "defines": ";".join(defines), "lib_dir": lib_dir, "framework_library": lib_name}




def _info_from(python):
    """info() as computed by another interpreter (the one with the TensorFlow to build for)."""
    env = dict(os.environ)
    env.pop(PYTHON_ENV, None)
    try:
        done = subprocess.run([python, os.path.abspath(__file__), "--json"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, env=env)
    except OSError as error:
        raise TensorflowNotFound("%s=%s cannot be run (%s): name a Python with TensorFlow installed"
                                 % (PYTHON_ENV, python, error))
    if done.returncode != 0:
        raise TensorflowNotFound("%s=%s: %s" % (PYTHON_ENV, python, done.stderr.strip()[-2000:]))
    return json.loads(done.stdout)


def info():
    other = os.environ.get(PYTHON_ENV)
    if other and os.path.realpath(other) != os.path.realpath(sys.executable):
        return _info_from(other)
    tf = _import_tensorflow()
    data = parse_flags(tf.sysconfig.get_compile_flags(), tf.sysconfig.get_link_flags())
    build = tf.sysconfig.get_build_info() if hasattr(tf.sysconfig, "get_build_info") else {}
    cuda = build.get("cuda_version") if build.get("is_cuda_build") else None
    version = tf.__version__
    data.update({
        "tensorflow_dir": os.path.dirname(os.path.abspath(tf.__file__)),
        "tensorflow_version": version,
        "tensorflow_public_version": version.split("+")[0],
        "tensorflow_cuda": ".".join(str(cuda).split(".")[:2]) if cuda else None,
    })
    return data


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
                handle.write('set(PERSEUS_TF_%s "%s")\n' % (key.upper(), _cmake_value(value)))
        return 0
    json.dump(data, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except TensorflowNotFound as error:
        sys.stderr.write("perseus_tensorflow build: %s\n" % error)
        sys.exit(2)
