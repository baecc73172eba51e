#!/usr/bin/env bash
# install_AIACC-Training.sh: install AIACC-Training (Perseus) 1.5.0 for the frameworks of a Python.
# Rendered by `aiacc-build render` from the release matrix: do not edit.
#
# It detects the Python, every installed framework (torch, tensorflow, mxnet), the CUDA each was
# built with (then the NVIDIA driver, then nvcc), picks the matching cell of the table below,
# explains the decision, checks the mirror's manifest against the table, downloads and verifies
# every wheel (size + sha256) before pip runs, installs them without touching the framework, and
# checks the import; a failure leaves the environment as it was. Run with --help for usage and exit codes.
set -euo pipefail

# Nothing but pip's install writes into the user's environment (no __pycache__ of anything we run).
export PYTHONDONTWRITEBYTECODE=1

readonly RELEASE=1.5.0
MIRROR_URL="${AIACC_MIRROR_URL:-https://ali-perseus-release.oss-cn-huhehaote.aliyuncs.com}"

readonly EXIT_USAGE=2
readonly EXIT_NO_PYTHON=3

# The cells of this release, one per line: framework version cuda|cpu python|any arch folder/file
CELL_TABLE="$(cat <<'AIACC_CELL_TABLE'
torch 1.7.1 11.0 3.6 x86_64 cuda110/perseus_torch-1.5.0+1.7.1-cp36-cp36m-linux_x86_64.whl
torch 1.7.1 11.0 3.8 x86_64 cuda110/perseus_torch-1.5.0+1.7.1-cp38-cp38-linux_x86_64.whl
torch 1.8.2 10.2 3.7 x86_64 cuda102/perseus_torch-1.5.0+1.8.2-cp37-cp37m-linux_x86_64.whl
tensorflow 2.4.0 11.0 any x86_64 cuda110/perseus_tensorflow-1.5.0+2.4.0-py2.py3-none-manylinux1_x86_64.whl
mxnet 1.7.0 10.0 any x86_64 cuda100/perseus_mxnet-1.5.0+1.7.0-py2.py3-none-manylinux1_x86_64.whl
AIACC_CELL_TABLE
)"

# What the build tool's framework adapters say about each framework: its distributions, how to find
# the CUDA it was built with, its binding's distribution and self-test (JSON, one framework a line).
FRAMEWORK_TABLE="$(cat <<'AIACC_FRAMEWORK_TABLE'
[
{"name": "torch", "display_name": "PyTorch", "import_name": "torch", "distributions": ["torch"], "distribution_pattern": null, "binding_distribution": "perseus_torch", "selftest_module": "perseus.torch._selftest", "installer": {"cuda_method": "python-assignment", "cuda_file": "version.py", "cuda_variable": "cuda", "cpu_distributions": []}},
{"name": "tensorflow", "display_name": "TensorFlow", "import_name": "tensorflow", "distributions": ["tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-aarch64", "intel-tensorflow", "tf-nightly"], "distribution_pattern": null, "binding_distribution": "perseus_tensorflow", "selftest_module": "perseus.tensorflow._selftest", "installer": {"cuda_method": "tensorflow-build-info", "cuda_file": null, "cuda_variable": null, "cpu_distributions": ["tensorflow-cpu"]}},
{"name": "mxnet", "display_name": "MXNet", "import_name": "mxnet", "distributions": ["mxnet", "mxnet-mkl", "mxnet-native"], "distribution_pattern": "mxnet-cu\\d+(mkl)?", "binding_distribution": "perseus_mxnet", "selftest_module": "perseus.mxnet._selftest", "installer": {"cuda_method": "distribution-suffix", "cuda_file": null, "cuda_variable": null, "cpu_distributions": []}}
]
AIACC_FRAMEWORK_TABLE
)"

usage() {
  cat <<USAGE
Usage: bash install_AIACC-Training.sh [--dry-run [--offline]] [--framework NAME] [--mirror URL|DIR]
                                     [--ca-bundle PEM] [--uninstall] [PYTHON]

Install AIACC-Training (Perseus) ${RELEASE} for the deep-learning frameworks installed for PYTHON
(default: python3), matching each framework's exact version, its CUDA (or CPU) build, the Python
version and the machine's architecture. With several frameworks installed, each gets its wheel.
Run it again after upgrading a framework: the matching wheel replaces the old one.

Options:
  -n, --dry-run         detect and explain the decision, and check the mirror publishes the chosen
                        wheels (reads its manifest); install nothing
  --offline             with --dry-run: decide from this script's table alone, without the mirror
  --framework NAME      only this framework: torch (pytorch, pt), tensorflow (tf), mxnet (mx)  --mirror URL|DIR      where the wheels come from: an https:// URL, http:// only on this machine
                        (127.0.0.1, ::1, localhost), or a local folder for offline installs
                        (default ${MIRROR_URL})
  --ca-bundle PEM       the certificate authorities to trust for an https:// mirror (a private CA)
  --uninstall           remove the AIACC-Training wheels (of --framework only, if given); never a framework
  -h, --help            this text

Environment:
  AIACC_MIRROR_URL      the mirror, when --mirror is not given
  AIACC_CA_BUNDLE       the CA bundle, when --ca-bundle is not given

Exit codes:
  0  installed, already up to date, uninstalled, or the decision was made (--dry-run)
  2  bad arguments
  3  no Python 3.6+ (the given command is missing, is not Python, or is too old)
  4  pip is not installed for that Python
  5  no framework (or not the one asked for) is installed for that Python
  6  this release has no build for an installed framework; the nearest cells are listed
  7  a system Python that refuses pip (PEP 668): use a virtual environment
  8  the mirror is plain HTTP on another host, not a URL or folder, or its TLS certificate does not verify
  9  the mirror cannot be reached or read (after retries)
  10  a downloaded wheel's size or sha256 differs from the mirror's manifest; nothing was installed
  11  the mirror's manifest disagrees with this script's table, or lacks the chosen wheel
  12  pip or the import check failed; the environment was restored as it was
USAGE
}

die() {  # die CODE MESSAGE
  local code="$1"
  shift
  printf 'error: %s\n' "$*" >&2
  exit "$code"
}

dry_run=0
offline=0
uninstall=0
ca_bundle="${AIACC_CA_BUNDLE:-}"
framework=""
python_cmd="python3"
python_given=""
while [ "$#" -gt 0 ]; do
  case "$1" in
    -h | --help) usage; exit 0 ;;
    -n | --dry-run) dry_run=1 ;;
    --offline) offline=1 ;;
    --uninstall) uninstall=1 ;;
    --mirror | --ca-bundle)
      [ "$#" -ge 2 ] && [ -n "$2" ] || die "$EXIT_USAGE" "$1 needs a value (see --help)"
      if [ "$1" = "--mirror" ]; then MIRROR_URL="$2"; else ca_bundle="$2"; fi
      shift
      ;;
    --mirror=?*) MIRROR_URL="${1#--mirror=}" ;;
    --ca-bundle=?*) ca_bundle="${1#--ca-bundle=}" ;;
    --mirror= | --ca-bundle=) die "$EXIT_USAGE" "${1%=} needs a value (see --help)" ;;
    --framework)
      [ "$#" -ge 2 ] || die "$EXIT_USAGE" "--framework needs a name: torch, tensorflow, mxnet"
      framework="$2"
      shift
      ;;
    --framework=*) framework="${1#--framework=}" ;;
    -*) die "$EXIT_USAGE" "unknown option '$1' (see --help)" ;;
    *)
      [ -z "$python_given" ] || die "$EXIT_USAGE" "one Python command only (got '$python_given' and '$1'; see --help)"
      python_cmd="$1"
      python_given="$1"
      ;;
  esac
  shift
done

if [ "$offline" = 1 ] && [ "$dry_run" = 0 ]; then
  die "$EXIT_USAGE" "--offline goes with --dry-run only: installing reads the mirror (see --help)"
fi

case "$framework" in
  "") ;;
  torch | pytorch | pt) framework=torch ;;
  tensorflow | tf) framework=tensorflow ;;
  mxnet | mx) framework=mxnet ;;
  *) die "$EXIT_USAGE" "unknown framework '$framework': use torch, tensorflow, mxnet" ;;
esac

if ! command -v "$python_cmd" >/dev/null 2>&1; then
  die "$EXIT_NO_PYTHON" "no Python: '$python_cmd' is not a command. Install Python 3, or pass your Python command as the last argument: bash install_AIACC-Training.sh python"
fi
python_version="$("$python_cmd" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)"
if ! [[ "$python_version" =~ ^[0-9]+\.[0-9]+$ ]]; then
  die "$EXIT_NO_PYTHON" "'$python_cmd' does not run as a Python interpreter"
fi
case "$python_version" in
  [0-2].* | 3.[0-5]) die "$EXIT_NO_PYTHON" "'$python_cmd' is Python $python_version; AIACC-Training needs Python 3.6 or newer" ;;
esac

exec env AIACC_CELL_TABLE="$CELL_TABLE" AIACC_RELEASE="$RELEASE" AIACC_MIRROR_URL="$MIRROR_URL" \
  AIACC_FRAMEWORK="$framework" AIACC_COMMON_WHEEL=perseus_common-1.5.0-py3-none-any.whl \
  AIACC_FRAMEWORKS="$FRAMEWORK_TABLE" \
  AIACC_DRY_RUN="$dry_run" AIACC_OFFLINE="$offline" AIACC_UNINSTALL="$uninstall" AIACC_CA_BUNDLE="$ca_bundle" \
  "$python_cmd" - <<'AIACC_INSTALLER_PY'
# --- exits.py ---------------------------------------------------------------------------------------
"""The install script's exit codes: the one table its shell part, its --help, its Python part and the
docs' list are made from."""
from collections import namedtuple

ExitCode = namedtuple("ExitCode", "name code meaning")

# In --help order. 0 is success of every kind; 1 is never used on purpose (an unexpected crash).
EXIT_CODES = (
    ExitCode("ok", 0, "installed, already up to date, uninstalled, or the decision was made (--dry-run)"),
    ExitCode("usage", 2, "bad arguments"),
    ExitCode("no_python", 3, "no Python 3.6+ (the given command is missing, is not Python, or is too old)"),
    ExitCode("no_pip", 4, "pip is not installed for that Python"),
    ExitCode("no_framework", 5, "no framework (or not the one asked for) is installed for that Python"),
    ExitCode("unsupported", 6, "this release has no build for an installed framework; the nearest cells are listed"),
    ExitCode("externally_managed", 7, "a system Python that refuses pip (PEP 668): use a virtual environment"),
    ExitCode("untrusted_mirror", 8, "the mirror is plain HTTP on another host, not a URL or folder, or its TLS "
             "certificate does not verify"),
    ExitCode("network", 9, "the mirror cannot be reached or read (after retries)"),
    ExitCode("checksum", 10, "a downloaded wheel's size or sha256 differs from the mirror's manifest; nothing was "
             "installed"),
    ExitCode("mirror_mismatch", 11, "the mirror's manifest disagrees with this script's table, or lacks the chosen "
             "wheel"),
    ExitCode("install_failed", 12, "pip or the import check failed; the environment was restored as it was"),
)
CODE = dict((e.name, e.code) for e in EXIT_CODES)


# --- common.py --------------------------------------------------------------------------------------
"""Output, failure and the small text helpers every part of the installer uses."""
import re
import subprocess
import sys



def say(text=""):
    sys.stdout.write(text + "\n")


def fail(code_name, text):
    sys.stderr.write("error: " + text + "\n")
    sys.exit(CODE[code_name])


def numbers(version):
    """'2.13.0' -> (2, 13, 0); stops at the first part that is not a number."""
    out = []
    for part in re.split(r"[.+]", version):
        if not part.isdigit():
            break
        out.append(int(part))
    return tuple(out)


def major_minor(version):
    return ".".join(str(n) for n in numbers(version)[:2])


def normalise(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def run(command):
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        out, _ = proc.communicate(timeout=20)
        return out if proc.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def indent(text):
    return "\n".join("    " + line for line in text.strip().splitlines()[-15:])


# --- table.py ---------------------------------------------------------------------------------------
"""What the rendered script embeds and hands over in the environment: the release's cell table and the
build tool's framework rows.

AIACC_CELL_TABLE: one line per cell, `framework version cuda|cpu python|any arch folder/file`.
AIACC_FRAMEWORKS: JSON, one row per framework adapter of the build tool (its distributions, how to find
the CUDA it was built with, its binding's distribution and self-test).
"""
import json
import os

FRAMEWORKS = json.loads(os.environ.get("AIACC_FRAMEWORKS") or "[]")
FRAMEWORK_NAMES = tuple(row["name"] for row in FRAMEWORKS)


def framework_row(name):
    return next(row for row in FRAMEWORKS if row["name"] == name)


class Cell(object):
    def __init__(self, line):
        fields = line.split()
        if len(fields) != 6:
            raise ValueError("bad cell table line: " + line)
        self.framework, self.version, self.accel, self.python, self.arch, self.path = fields

    def describe(self):
        accel = "CPU" if self.accel == "cpu" else "CUDA " + self.accel
        python = "any Python 3" if self.python == "any" else "Python " + self.python
        return "%s %s, %s, %s, %s" % (self.framework, self.version, accel, python, self.arch)


# script path -> the mirror's path of the same wheel under the platform tag its build proved (a wheel built
# outside the release's manylinux image: manylinux_2_36 instead of manylinux_2_28); set from manifest.json
MIRROR_PATHS = {}


def same_wheel_other_platform(mine, theirs):
    """True when two wheel paths differ only in the platform tag, for the same arch (the last `_<arch>`)."""
    if not (mine.endswith(".whl") and theirs.endswith(".whl")):
        return False
    mine_head, mine_platform = mine[:-4].rsplit("-", 1)
    their_head, their_platform = theirs[:-4].rsplit("-", 1)
    arch = lambda platform: platform.split(".")[0].split("_", 3)[-1] if platform.startswith("manylinux_") else platform.split("_", 1)[-1]
    return mine_head == their_head and arch(mine_platform) == arch(their_platform)


def load_table():
    cells = []
    for line in os.environ["AIACC_CELL_TABLE"].splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            cell = Cell(line)
            cell.path = MIRROR_PATHS.get(cell.path, cell.path)
            cells.append(cell)
    return cells


# --- cuda_drivers.py --------------------------------------------------------------------------------
"""The oldest Linux driver of each CUDA toolkit, newest first: generated from matrix/facts/cuda_drivers.yaml
by `aiacc-build matrix driver-tables --write`. Do not edit."""

DRIVER_FOR_CUDA = (('13.0', '580.65.06'),
 ('12.9', '575.51.03'),
 ('12.8', '570.26'),
 ('12.6', '560.28.03'),
 ('12.5', '555.42.02'),
 ('12.4', '550.54.14'),
 ('12.3', '545.23.06'),
 ('12.2', '535.54.03'),
 ('12.1', '530.30.02'),
 ('12.0', '525.60.13'),
 ('11.8', '520.61.05'),
 ('11.7', '515.43.04'),
 ('11.6', '510.39.01'),
 ('11.5', '495.29.05'),
 ('11.4', '470.42.01'),
 ('11.3', '465.19.01'),
 ('11.2', '460.27.03'),
 ('11.1', '455.23'),
 ('11.0', '450.36.06'),
 ('10.2', '440.33'),
 ('10.1', '418.39'),
 ('10.0', '410.48'))


# --- detect.py --------------------------------------------------------------------------------------
"""Detection: the frameworks installed for this Python (read from their metadata and files, never
imported), the CUDA each was built with, the NVIDIA driver, nvcc, the architecture, PEP 668."""
import os
import platform
import re
import sys
import sysconfig



def installed_distributions():
    """{normalised name: (name, version)} of every installed distribution, without importing any."""
    found = {}
    try:
        from importlib import metadata  # Python 3.8+
        for dist in metadata.distributions():
            name = dist.metadata["Name"]
            if name:
                found.setdefault(normalise(name), (name, dist.version))
        return found
    except ImportError:
        pass
    # Python 3.6 / 3.7: read the metadata on sys.path directly.
    for name, version, _ in metadata_folders():
        found.setdefault(normalise(name), (name, version))
    return found


def metadata_folders():
    """(name, version, folder) of every *.dist-info / *.egg-info on sys.path, first one of a name first."""
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        for child in sorted(os.listdir(entry)):
            if not child.endswith((".dist-info", ".egg-info")):
                continue
            folder = os.path.join(entry, child)
            meta = os.path.join(folder, "METADATA" if child.endswith(".dist-info") else "PKG-INFO")
            name = version = None
            try:
                with open(meta, encoding="utf-8", errors="replace") as handle:
                    for line in handle:
                        if line.startswith("Name:"):
                            name = line.split(":", 1)[1].strip()
                        elif line.startswith("Version:"):
                            version = line.split(":", 1)[1].strip()
                        elif not line.strip():
                            break
            except (IOError, OSError):
                continue
            if name and version:
                yield name, version, folder


def package_dir(module):
    """The folder of a top-level package, found without importing it."""
    import importlib.util
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def cuda_from_label(label):
    """Local version label 'cu118' -> '11.8', 'cpu' -> 'cpu'; None when it names no build."""
    if label == "cpu":
        return "cpu"
    match = re.match(r"^cu(\d+)(\d)$", label or "")
    if match:
        return "%s.%s" % (match.group(1), match.group(2))
    return None


def cuda_of_python_assignment(row, dist_name, version):
    """`cuda = '12.4'` (None: CPU) in a file of the package folder, after the version's local label."""
    label = version.split("+", 1)[1] if "+" in version else ""
    from_label = cuda_from_label(label)
    if from_label:
        return from_label, "the version label +" + label
    detection = row["installer"]
    folder = package_dir(row["import_name"])
    path = os.path.join(folder, detection["cuda_file"]) if folder else None
    text = read(path) if path else None
    if text is not None:
        pattern = r"^%s(?:\s*:[^=\n]*)?=\s*(?:'([^']*)'|\"([^\"]*)\"|None)" % re.escape(detection["cuda_variable"])
        match = re.search(pattern, text, re.M)
        if match:
            value = match.group(1) or match.group(2)
            return (major_minor(value) if value else "cpu"), "%s.%s in %s" % (
                row["import_name"], detection["cuda_variable"], path)
    return None, "%s/%s not readable" % (row["import_name"], detection["cuda_file"])


def cuda_of_tensorflow_build_info(row, dist_name, version):
    folder = package_dir(row["import_name"])
    path = os.path.join(folder, "python", "platform", "build_info.py") if folder else None
    text = read(path) if path else None
    if text is None:
        return None, "%s's build_info.py not readable" % row["import_name"]
    accel = cuda_from_build_info(text)
    if accel:
        return accel, "the %s build info in %s" % (row["display_name"], path)
    return None, "no CUDA version in " + path


def cuda_from_build_info(text):
    """TensorFlow's build_info.py, any era: the dict / OrderedDict / item forms of 2.x, 1.x's variable."""
    match = re.search(r"['\"]cuda_version['\"]\s*(?:\]\s*=|,|:)\s*['\"]([0-9.]+)['\"]", text)
    if not match:
        match = re.search(r"cuda_version_number\s*=\s*['\"]([0-9.]+)['\"]", text)
    if match:
        return major_minor(match.group(1))
    if re.search(r"['\"]?is_cuda_build['\"]?\s*(?:\]\s*=|,|:|=)\s*False", text):
        return "cpu"
    return None


def cuda_of_distribution_suffix(row, dist_name, version):
    match = re.search(r"-cu(\d+)", normalise(dist_name))
    if match:
        return cuda_from_label("cu" + match.group(1)), "the distribution name " + dist_name
    return "cpu", "the distribution name %s (%s builds without -cuXY are CPU-only)" % (dist_name, row["display_name"])


CUDA_READERS = {
    "python-assignment": cuda_of_python_assignment,
    "tensorflow-build-info": cuda_of_tensorflow_build_info,
    "distribution-suffix": cuda_of_distribution_suffix,
}


def framework_cuda(framework, dist_name, version):
    """(cuda 'X.Y' | 'cpu' | None, where that came from) of an installed framework."""
    row = framework_row(framework)
    if normalise(dist_name) in row["installer"]["cpu_distributions"]:
        return "cpu", "the distribution name " + dist_name
    return CUDA_READERS[row["installer"]["cuda_method"]](row, dist_name, version)


def provides(row, key):
    """True when the distribution (normalised name) installs this framework."""
    pattern = row["distribution_pattern"]
    return key in row["distributions"] or bool(pattern and re.match("^(?:%s)$" % pattern, key))


def installed_frameworks():
    """[(framework, distribution, version)], one per framework, in FRAMEWORKS order."""
    dists = installed_distributions()
    result = []
    for row in FRAMEWORKS:
        for key, (name, version) in sorted(dists.items()):
            if provides(row, key):
                result.append((row["name"], name, version))
                break
    return result


def driver():
    """(driver version, highest CUDA it runs, where from) or (None, None, why not)."""
    text = read("/proc/driver/nvidia/version")
    version = None
    source = None
    if driver_from_proc(text):
        version, source = driver_from_proc(text), "/proc/driver/nvidia/version"
    if version is None:
        out = run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
        if out and out.strip():
            version, source = out.strip().splitlines()[0].strip(), "nvidia-smi"
    if version is None:
        return None, None, "no NVIDIA driver (no /proc/driver/nvidia/version, no nvidia-smi)"
    return version, cuda_for_driver(version), source


def driver_from_proc(text):
    match = re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)", text or "")
    return match.group(1) if match else None


def cuda_for_driver(version):
    """The newest CUDA toolkit a driver version runs, or None when it is older than CUDA 10.0's."""
    for cuda, minimum in DRIVER_FOR_CUDA:
        if numbers(version) >= numbers(minimum):
            return cuda
    return None


def nvcc():
    candidates = ["nvcc", "/usr/local/cuda/bin/nvcc"]
    for command in candidates:
        out = run([command, "--version"])
        match = re.search(r"release (\d+\.\d+)", out or "")
        if match:
            return match.group(1), command
    return None, None


def externally_managed():
    """The PEP 668 marker of a system Python outside a virtual environment, or None."""
    in_venv = getattr(sys, "base_prefix", sys.prefix) != sys.prefix or hasattr(sys, "real_prefix")
    if in_venv:
        return None
    marker = os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")
    return marker if os.path.isfile(marker) else None


def host_arch():
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


# --- decide.py --------------------------------------------------------------------------------------
"""The decision: one cell of the table per installed framework, explained; the nearest cells when
there is none."""
import os
import platform
import sys



def python_fits(cell, python):
    return cell.python in ("any", python)


def nearest(cells, framework, version, accel, python, arch, published=None, limit=5):
    """The closest cells of `framework`; with `published` (the mirror's wheel paths), only those."""
    def distance(cell):
        v_cell, v_mine = numbers(cell.version), numbers(version)
        v_dist = tuple(abs(a - b) for a, b in zip(v_cell + (0, 0, 0), v_mine + (0, 0, 0)))[:3]
        if accel is None or cell.accel == accel:
            a_dist = 0
        elif "cpu" in (cell.accel, accel):
            a_dist = 10000
        else:
            a_dist = abs(_cuda_number(cell.accel) - _cuda_number(accel))
        p_dist = 0 if python_fits(cell, python) else 1 + abs(numbers(cell.python)[1] - numbers(python)[1])
        return (cell.arch != arch, v_dist, a_dist, p_dist)
    same = [c for c in cells if c.framework == framework and (published is None or c.path in published)]
    return sorted(same, key=distance)[:limit]


def _cuda_number(cuda):
    n = numbers(cuda)
    return n[0] * 100 + (n[1] if len(n) > 1 else 0)


def decide(cells, framework, version, accel, python, arch, driver_cuda, nvcc_cuda):
    """(cell or None, how the accelerator was chosen)."""
    public = version.split("+", 1)[0]
    matching = [c for c in cells if c.framework == framework and c.version == public and c.arch == arch and python_fits(c, python)]
    if accel is not None:
        exact = [c for c in matching if c.accel == accel]
        return (exact[0] if exact else None), None
    # The framework's own CUDA is unknown: the driver's highest CUDA, then the toolkit's.
    cuda_cells = sorted((c for c in matching if c.accel != "cpu"), key=lambda c: _cuda_number(c.accel), reverse=True)
    if driver_cuda:
        fitting = [c for c in cuda_cells if _cuda_number(c.accel) <= _cuda_number(driver_cuda)]
        if fitting:
            return fitting[0], "the newest CUDA the driver runs (%s)" % driver_cuda
    if nvcc_cuda:
        exact = [c for c in cuda_cells if c.accel == nvcc_cuda]
        if exact:
            return exact[0], "the installed CUDA toolkit (nvcc %s)" % nvcc_cuda
    return None, None


def detect_and_decide(published=None):
    """Detect, decide and explain: [(framework, cell, how the CUDA was picked)], one per framework to install.
    `published`: the wheel paths the mirror publishes (None: the mirror was not read)."""
    cells = load_table()
    release = os.environ["AIACC_RELEASE"]
    wanted = os.environ.get("AIACC_FRAMEWORK", "")
    python = "%d.%d" % sys.version_info[:2]
    arch = host_arch()

    say("AIACC-Training %s installer" % release)
    say("python:     %s (Python %s, %s)" % (sys.executable, platform.python_version(), arch))

    frameworks = installed_frameworks()
    if wanted:
        frameworks = [f for f in frameworks if f[0] == wanted]
        if not frameworks:
            fail("no_framework", "%s is not installed for %s (Python %s). Install %s first, or pass the Python "
                 "that has it: bash install_AIACC-Training.sh /path/to/python" % (wanted, sys.executable, python, wanted))
    if not frameworks:
        fail("no_framework", "no deep-learning framework is installed for %s (Python %s): looked for %s. "
             "Install your framework first, or pass the Python that has it: "
             "bash install_AIACC-Training.sh /path/to/python" % (sys.executable, python, ", ".join(FRAMEWORK_NAMES)))

    driver_version, driver_cuda, driver_source = driver()
    if driver_version:
        say("driver:     NVIDIA %s from %s, runs CUDA up to %s" % (driver_version, driver_source, driver_cuda or "(older than 10.0)"))
    else:
        say("driver:     none: %s" % driver_source)
    nvcc_cuda, nvcc_command = nvcc()
    say("nvcc:       %s" % ("CUDA %s (%s)" % (nvcc_cuda, nvcc_command) if nvcc_cuda else "not found"))

    chosen = []
    problems = []
    for framework, dist_name, version in frameworks:
        accel, source = framework_cuda(framework, dist_name, version)
        built = "CPU" if accel == "cpu" else ("CUDA " + accel if accel else "unknown CUDA")
        say("%-11s %s %s, built for %s (from %s)" % (framework + ":", dist_name, version, built, source))
        if accel not in (None, "cpu") and driver_cuda and _cuda_number(accel) > _cuda_number(driver_cuda):
            say("warning:    driver %s runs CUDA up to %s; %s built for CUDA %s will not use the GPU"
                % (driver_version, driver_cuda, framework, accel))
        cell, how = decide(cells, framework, version, accel, python, arch, driver_cuda, nvcc_cuda)
        if cell is None:
            public = version.split("+", 1)[0]
            near = nearest(cells, framework, public, accel, python, arch, published)
            lines = ["  " + c.describe() + "  (" + c.path + ")" for c in near]
            where = "nearest cells this mirror publishes" if published is not None else "nearest supported cells"
            problems.append("AIACC-Training %s has no build for %s %s, %s, Python %s, %s.\n %s:\n%s"
                            % (release, framework, public, built, python, arch, where, "\n".join(lines) or "  (none)"))
            continue
        chosen.append((framework, cell, how))

    if problems:
        hint = ""
        if chosen:
            hint = "\n the supported ones alone: --framework " + " or --framework ".join(f for f, _, _ in chosen)
        fail("unsupported", "\n".join(problems) + hint)

    for framework, cell, how in chosen:
        say("decision:   %s -> %s%s" % (framework, cell.path, "  (CUDA picked by " + how + ")" if how else ""))
    return chosen


# --- prerequisites.py -------------------------------------------------------------------------------
"""What must hold of the Python before anything is downloaded: pip may install into it, and
perseus-common's backports for an old Python are there."""
import os
import sys



# What perseus-common needs from an old Python beyond its standard library: (module, the first Python
# that has it). The install runs pip with --no-deps on the mirror's verified files only, so they must be
# importable already.
PREREQUISITES = (("dataclasses", (3, 7)),)


def check_prerequisites():
    """perseus-common's backports for this Python are installed (the script never reaches an index)."""
    missing = []
    for module, standard_from in PREREQUISITES:
        if sys.version_info[:2] >= standard_from:
            continue
        try:
            __import__(module)
        except ImportError:
            missing.append((module, standard_from))
    if missing:
        names = " ".join(module for module, _ in missing)
        fail("unsupported", "Python %d.%d lacks %s, which perseus needs (standard from Python %s on). This script "
             "installs only the mirror's verified wheels and never reaches a package index, so install %s first, "
             "then run the script again:\n  %s -m pip install %s" % (
                 sys.version_info[0], sys.version_info[1], ", ".join(m for m, _ in missing),
                 ".".join(str(n) for n in missing[0][1]), "it" if len(missing) == 1 else "them", sys.executable, names))


def check_pip():
    """pip exists for this Python and may install into it (PEP 668)."""
    try:
        import importlib.util
        has_pip = importlib.util.find_spec("pip") is not None
    except ImportError:
        has_pip = False
    if not has_pip:
        fail("no_pip", "pip is not installed for %s. Install it (%s -m ensurepip --upgrade, or your "
             "distribution's python3-pip package) and run the script again" % (sys.executable, sys.executable))
    marker = externally_managed()
    if marker and os.environ.get("PIP_BREAK_SYSTEM_PACKAGES", "").lower() not in ("1", "true", "yes", "on"):
        fail("externally_managed", "%s is a system Python that refuses pip installs (PEP 668: %s). Use a virtual "
             "environment that sees your framework:\n  %s -m venv --system-site-packages ~/perseus-env\n"
             "  bash install_AIACC-Training.sh ~/perseus-env/bin/python\nor allow a per-user install: "
             "PIP_BREAK_SYSTEM_PACKAGES=1 with pip install --user" % (sys.executable, marker, sys.executable))


# --- mirror.py --------------------------------------------------------------------------------------
"""Where the release is published, and reading it: an https:// URL, http:// only on this machine, or a
local folder; downloads checked against the manifest's size and sha256 as they stream."""
import hashlib
import ipaddress
import json
import os
import ssl
import time

try:
    from urllib.error import HTTPError, URLError
    from urllib.parse import quote, urlsplit
    from urllib.request import HTTPSHandler, ProxyHandler, Request, build_opener, url2pathname
except ImportError:  # pragma: no cover - Python 2 is refused by the shell part before this runs
    raise SystemExit("Python 3 is required")


RETRIES = 3
RETRY_DELAY_SECONDS = 1.0
TIMEOUT_SECONDS = 60
CHUNK = 1 << 20


class Mirror(object):
    """Where the release is published: an https:// URL, an http:// URL on a loopback host, or a local
    folder (a path or file://) for offline installs."""

    def __init__(self, location, ca_bundle):
        self.location = location
        self.folder = None
        self.opener = None
        if location.startswith("file://"):
            self.folder = url2pathname(urlsplit(location).path)
        elif "://" not in location:
            self.folder = os.path.abspath(location)
        else:
            parts = urlsplit(location)
            if parts.scheme not in ("https", "http"):
                fail("untrusted_mirror", "mirror %s: only https:// URLs (http:// on 127.0.0.1 / ::1 / localhost) "
                     "and local folders are mirrors" % location)
            if parts.scheme == "http" and not is_loopback(parts.hostname):
                fail("untrusted_mirror", "mirror %s is plain HTTP on a host that is not this machine: wheels would "
                     "travel unauthenticated. Use its https:// URL (with --ca-bundle for a private CA), or a "
                     "local folder" % location)
            if ca_bundle and not os.path.isfile(ca_bundle):
                fail("usage", "--ca-bundle %s: no such file" % ca_bundle)
            # --ca-bundle replaces the system's certificate authorities, as pip's --cert does.
            handlers = [HTTPSHandler(context=ssl.create_default_context(cafile=ca_bundle or None))]
            if is_loopback(parts.hostname):
                handlers.append(ProxyHandler({}))  # this machine's own server: never through a proxy
            self.opener = build_opener(*handlers)
        if self.folder is not None and not os.path.isdir(self.folder):
            fail("network", "mirror folder %s does not exist (give the folder that holds manifest.json, "
                 "e.g. dist/<release>)" % self.folder)

    def where(self, path):
        """The URL (or file) of a path relative to the mirror root; `+` is sent as %2B."""
        if self.folder is not None:
            return os.path.join(self.folder, *path.split("/"))
        return self.location.rstrip("/") + "/" + quote(path, safe="/")

    def fetch(self, path, sink):
        """Write the file at `path` to the callable `sink` chunk by chunk, retrying network failures."""
        where = self.where(path)
        if self.folder is not None:
            try:
                with open(where, "rb") as handle:
                    for chunk in iter(lambda: handle.read(CHUNK), b""):
                        sink(chunk)
                return
            except (IOError, OSError) as error:
                if not os.path.exists(where):
                    fail("mirror_mismatch", "the mirror folder has no %s: is %s a mirror of AIACC-Training %s?"
                         % (where, self.folder, os.environ["AIACC_RELEASE"]))
                fail("network", "cannot read %s from the mirror folder: %s" % (where, error))
        last = None
        for attempt in range(1, RETRIES + 1):
            try:
                request = Request(where, headers={"User-Agent": "install_AIACC-Training.sh/" + os.environ["AIACC_RELEASE"]})
                with self.opener.open(request, timeout=TIMEOUT_SECONDS) as response:
                    for chunk in iter(lambda: response.read(CHUNK), b""):
                        sink(chunk)
                return
            except HTTPError as error:
                if error.code < 500:
                    fail("mirror_mismatch", "the mirror has no %s (HTTP %d %s): is %s a mirror of AIACC-Training %s?"
                         % (where, error.code, error.reason, self.location, os.environ["AIACC_RELEASE"]))
                last = "HTTP %d %s" % (error.code, error.reason)
            except (URLError, OSError) as error:
                reason = getattr(error, "reason", error)
                if isinstance(reason, ssl.SSLError) and "CERTIFICATE_VERIFY_FAILED" in str(reason):
                    fail("untrusted_mirror", "the TLS certificate of %s could not be verified (%s). If the mirror "
                         "uses a private certificate authority, pass its certificate: --ca-bundle CA.pem "
                         "(or AIACC_CA_BUNDLE)" % (self.location, getattr(reason, "verify_message", None) or reason))
                last = str(reason)
            if attempt < RETRIES:
                say("retry:      %s failed (%s); attempt %d of %d" % (where, last, attempt + 1, RETRIES))
                time.sleep(RETRY_DELAY_SECONDS * attempt)
        fail("network", "cannot download %s after %d attempts: %s. Check the network or the mirror (--mirror URL, "
             "or a local folder for offline installs)" % (where, RETRIES, last))

    def read_json(self, path):
        parts = []
        self.fetch(path, parts.append)
        try:
            return json.loads(b"".join(parts).decode("utf-8"))
        except ValueError as error:
            fail("mirror_mismatch", "%s is not valid JSON (%s): is %s an AIACC-Training mirror?" % (self.where(path), error, self.location))

    def download(self, path, expected_size, expected_sha256, folder):
        """Download into `folder`; the file must have exactly the manifest's size and sha256."""
        target = os.path.join(folder, path.split("/")[-1])
        digest = hashlib.sha256()
        state = {"size": 0}
        with open(target, "wb") as out:
            def sink(chunk):
                state["size"] += len(chunk)
                if state["size"] > expected_size:
                    fail("checksum", "%s is larger than the %d bytes the mirror's manifest gives: tampered or "
                         "replaced; nothing was installed" % (self.where(path), expected_size))
                digest.update(chunk)
                out.write(chunk)
            self.fetch(path, sink)
        if state["size"] != expected_size:
            fail("checksum", "%s has %d bytes, the mirror's manifest gives %d: truncated download or damaged mirror; "
                 "nothing was installed" % (self.where(path), state["size"], expected_size))
        if digest.hexdigest() != expected_sha256:
            fail("checksum", "%s: sha256 %s, the mirror's manifest gives %s: tampered or damaged file; nothing "
                 "was installed" % (self.where(path), digest.hexdigest(), expected_sha256))
        return target


def is_loopback(host):
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


# --- manifest.py ------------------------------------------------------------------------------------
"""The mirror's manifest.json against the table this script embeds: same release, same cells, same
wheels; what it publishes."""
import os



def table_entry(framework, version, cuda, python, arch):
    return (framework, version, cuda or "cpu", python or "any", arch)


def check_manifest(manifest, cells, release, common_path):
    """The mirror publishes this script's release, built from the same table. Returns {path: record}."""
    if manifest.get("release") != release:
        fail("mirror_mismatch", "the mirror publishes AIACC-Training %s, this script installs %s: use the install "
             "script that mirror publishes, or the mirror of release %s" % (manifest.get("release"), release, release))
    mine = dict((table_entry(c.framework, c.version, c.accel, c.python, c.arch), c.path) for c in cells)
    theirs = dict((table_entry(r["framework"], r["framework_version"], r.get("cuda"), r.get("python"), r["arch"]), r["path"])
                  for r in manifest.get("cells", []))
    differences = []
    for key in sorted(set(mine) | set(theirs)):
        if key in mine and key in theirs and mine[key] != theirs[key] and same_wheel_other_platform(mine[key], theirs[key]):
            MIRROR_PATHS[mine[key]] = theirs[key]  # the tag the build proved: the mirror's file is this cell's
            continue
        if mine.get(key) != theirs.get(key):
            differences.append("  %s: this script %s, the mirror %s" % (" ".join(key), mine.get(key, "(no cell)"), theirs.get(key, "(no cell)")))
    common = manifest.get("common", {})
    if common.get("path") != common_path:
        differences.append("  perseus-common: this script %s, the mirror %s" % (common_path, common.get("path")))
    if differences:
        fail("mirror_mismatch", "the mirror's manifest.json and this script's table of AIACC-Training %s disagree "
             "(%d differences):\n%s\nDownload the install script from the same mirror, or point --mirror at the "
             "mirror this script came from" % (release, len(differences), "\n".join(differences[:10])))
    records = dict((r["path"], r) for r in manifest["cells"])
    records[common_path] = dict(common, status="built")
    return records


def read_manifest(mirror, release):
    """{path: record} of what the mirror publishes, checked against this script's table (exit 9 when the
    mirror cannot be read, 11 when it disagrees)."""
    manifest = mirror.read_json("manifest.json")
    records = check_manifest(manifest, load_table(), release, os.environ["AIACC_COMMON_WHEEL"])
    say("mirror:     %s (manifest of AIACC-Training %s agrees with this script)" % (mirror.location, release))
    return records


def published_paths(records):
    return set(path for path, record in records.items() if record.get("status") == "built")


def check_published(chosen, records):
    """Every chosen wheel is one the mirror publishes (exit 11 otherwise)."""
    published = published_paths(records)
    for _, cell, _ in chosen:
        if cell.path not in published:
            fail("mirror_mismatch", "the mirror does not publish %s (not built for this release). Install from a "
                 "mirror that has it, or pass --framework for the others" % cell.path)


# --- environment.py ---------------------------------------------------------------------------------
"""The user's environment: the perseus distributions installed in it, their backup, pip, and what a
wheel needs that is not installed. pip installs only verified local files (no index, no dependencies)."""
import csv
import os
import re
import shutil
import subprocess
import sys


PERSEUS_DISTRIBUTIONS = ("perseus-common",) + tuple(normalise(row["binding_distribution"]) for row in FRAMEWORKS)


def installed_perseus():
    """{normalised name: (name, version, dist-info folder)} of the perseus distributions this Python sees."""
    found = {}
    for name, version, folder in metadata_folders():
        key = normalise(name)
        if key in PERSEUS_DISTRIBUTIONS and folder.endswith(".dist-info") and key not in found:
            # named as its wheel (and pip's messages) spell it: the dist-info folder's name
            found[key] = (os.path.basename(folder).split("-")[0], version, folder)
    return found


class Backup(object):
    """A copy of every file an installed distribution's RECORD lists, to put back after a failed change."""

    def __init__(self, folder):
        self.folder = folder
        self.files = []  # (original path, copy)

    def add(self, dist_info):
        site = os.path.dirname(dist_info)
        with open(os.path.join(dist_info, "RECORD"), newline="") as handle:
            for row in csv.reader(handle):
                if not row:
                    continue
                original = os.path.normpath(os.path.join(site, row[0]))
                if not os.path.isfile(original):
                    continue
                copy = os.path.join(self.folder, str(len(self.files)))
                shutil.copy2(original, copy)
                self.files.append((original, copy))

    def restore(self):
        for original, copy in self.files:
            parent = os.path.dirname(original)
            if not os.path.isdir(parent):
                os.makedirs(parent)
            shutil.copy2(copy, original)


def pip(*args):
    """Run this Python's pip quietly; (exit code, output)."""
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.Popen([sys.executable, "-m", "pip"] + list(args), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, universal_newlines=True, env=env)
    out, _ = proc.communicate()
    return proc.returncode, out


def pip_install_verified(files, folder):
    """pip installs exactly these downloaded files, checking their sha256 itself: no index, no
    dependencies. Pinned by name and version from the download folder, so `pip freeze` shows
    `name==version` rather than a temporary file URL."""
    requirements = os.path.join(folder, "requirements.txt")
    with open(requirements, "w") as handle:
        for path, sha256 in files:
            handle.write("%s==%s --hash=sha256:%s\n" % (wheel_project(path), wheel_version(path), sha256))
    return pip("install", "--no-index", "--find-links", os.path.dirname(files[0][0]), "--no-deps",
               "--require-hashes", "--no-cache-dir", "-r", requirements)


def wheel_version(path):
    """perseus_torch-2.0.0+2.13.0-cp311-... -> 2.0.0+2.13.0 (wheel file names escape nothing else here)."""
    return os.path.basename(path).split("-")[1]


def wheel_project(path):
    return normalise(os.path.basename(path).split("-")[0])


def missing_requirements(wheel_file):
    """Requires-Dist of a perseus wheel that are not installed (only python_version markers are evaluated)."""
    import zipfile
    with zipfile.ZipFile(wheel_file) as archive:
        name = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")][0]
        metadata = archive.read(name).decode("utf-8")
    installed = installed_distributions()
    missing = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        requirement, _, marker = line.split(":", 1)[1].partition(";")
        project = normalise(re.split(r"[\s<>=!~\[(]", requirement.strip(), 1)[0])
        if project in PERSEUS_DISTRIBUTIONS or not marker_applies(marker):
            continue
        if project not in installed:
            missing.append(requirement.strip())
    return missing


def marker_applies(marker):
    marker = marker.strip()
    if not marker:
        return True
    match = re.match(r"""^python_version\s*(<=|>=|<|>|==|!=)\s*['"]([0-9.]+)['"]$""", marker)
    if not match:
        return True  # a marker this script cannot evaluate: require the dependency, and say so if missing
    mine, theirs = tuple(sys.version_info[:2]), numbers(match.group(2))
    return {"<": mine < theirs, "<=": mine <= theirs, ">": mine > theirs, ">=": mine >= theirs,
            "==": mine == theirs, "!=": mine != theirs}[match.group(1)]


# --- apply.py ---------------------------------------------------------------------------------------
"""Installing, in the order that makes every failure leave the environment as it was: every wheel
downloaded and verified (size + sha256) BEFORE pip runs; the installed perseus distributions backed up;
pip installs the verified local files (--no-index --no-deps --require-hashes: no network, never the
framework); the import checked; on any failure after pip started, what was installed is uninstalled
and the backup put back. Uninstalling removes perseus wheels only, never a framework."""
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile



def check_import(frameworks):
    """Run each installed wheel's own self-test (import, build manifest against the running framework,
    one op) and both commands; [problems]. pip's result already showed the wheels' versions."""
    problems = []
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    for framework in frameworks:
        command = [sys.executable, "-m", framework_row(framework)["selftest_module"]]
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                universal_newlines=True, env=env, cwd=tempfile.gettempdir())
        out, _ = proc.communicate()
        if proc.returncode != 0:
            problems.append("import perseus.%s failed: python %s exited %d:\n%s" % (
                framework, " ".join(command[1:]), proc.returncode, indent(out)))
        else:
            say("check:      " + out.strip().splitlines()[-1])
    scripts = sysconfig.get_path("scripts")
    for command in ("perseus", "perseusrun"):
        path = os.path.join(scripts, command)
        out = run([path, "--help"])
        if out is None:
            problems.append("%s --help does not run (%s)" % (command, path))
    if not problems:
        say("check:      perseus and perseusrun run (%s)" % scripts)
    return problems


def install(chosen, mirror, release, records):
    common_path = os.environ["AIACC_COMMON_WHEEL"]
    paths = [common_path] + [cell.path for _, cell, _ in chosen]

    before = installed_perseus()
    wanted = dict((wheel_project(p), (p, wheel_version(p))) for p in paths)
    to_install = [p for key, (p, version) in sorted(wanted.items()) if before.get(key, (None, None))[1] != version]
    for key, (path, version) in sorted(wanted.items()):
        if path not in to_install:
            say("installed:  %s %s already (up to date)" % (before[key][0], version))

    folder = tempfile.mkdtemp(prefix="aiacc-install-")
    try:
        files = []
        for path in to_install:
            record = records[path]
            say("download:   %s (%d bytes)" % (mirror.where(path), record["size"]))
            files.append((mirror.download(path, record["size"], record["sha256"], folder), record["sha256"]))
            say("verified:   sha256 %s" % record["sha256"])
        missing = [m for local, _ in files for m in missing_requirements(local)]
        if missing:
            fail("install_failed", "the perseus wheels need %s, which %s lacks: install %s first (pip install %s) and "
                 "run the script again; nothing was installed" % (", ".join(missing), sys.executable,
                                                                 "them" if len(missing) > 1 else "it", " ".join(missing)))
        if files:
            replaced = [wheel_project(p) for p in to_install if wheel_project(p) in before]
            apply_change(files, replaced, before, [f for f, _, _ in chosen], folder)
        else:
            problems = check_import([f for f, _, _ in chosen])
            if problems:
                fail("install_failed", "AIACC-Training %s is installed but does not work:\n%s\nReinstall with "
                     "--uninstall, then run the script again" % (release, "\n".join(problems)))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    say("done:       AIACC-Training %s is installed for %s" % (release, sys.executable))


def apply_change(files, replaced, before, frameworks, folder):
    """pip-install the verified files; if pip or the import check fails, put the previous state back."""
    backup = Backup(os.path.join(folder, "backup"))
    os.makedirs(backup.folder)
    for key in replaced:
        backup.add(before[key][2])
        say("backup:     %s %s" % (before[key][0], before[key][1]))
    code, out = pip_install_verified(files, folder)
    problems = [] if code == 0 else ["pip install failed (exit %d):\n%s" % (code, indent(out))]
    if not problems:
        now = installed_perseus()
        problems = ["pip left %s %s installed, not %s" % (wheel_project(f), now.get(wheel_project(f), (None, "nothing"))[1], wheel_version(f))
                    for f, _ in files if now.get(wheel_project(f), (None, None))[1] != wheel_version(f)]
    if not problems:
        say("pip:        installed " + ", ".join(os.path.basename(f) for f, _ in files))
        problems = check_import(frameworks)
    if not problems:
        return
    names = [wheel_project(f) for f, _ in files]
    pip("uninstall", "-y", *names)
    backup.restore()
    restored = ", ".join("%s %s" % (before[key][0], before[key][1]) for key in replaced) or "nothing was installed before"
    fail("install_failed", "%s\nThe environment is as it was (restored: %s)." % ("\n".join(problems), restored))


def uninstall(frameworks):
    """Remove the perseus wheels of the named frameworks (all when none is named); never a framework."""
    installed = installed_perseus()
    bindings = [k for k in installed if k != "perseus-common"]
    if frameworks:
        remove = [k for k in bindings if k == normalise(framework_row(frameworks[0])["binding_distribution"])]
        if not [k for k in bindings if k not in remove]:
            remove += [k for k in installed if k == "perseus-common"]
    else:
        remove = list(installed)
    if not remove:
        say("uninstall:  no AIACC-Training wheel is installed for %s%s" % (sys.executable, " and " + frameworks[0] if frameworks else ""))
        return
    code, out = pip("uninstall", "-y", *[installed[k][0] for k in remove])
    if code != 0:
        fail("install_failed", "pip uninstall failed (exit %d):\n%s" % (code, indent(out)))
    for key in remove:
        say("removed:    %s %s" % (installed[key][0], installed[key][1]))


# --- __main__.py ------------------------------------------------------------------------------------
"""install_AIACC-Training.sh's program: the shell part checks the arguments and the Python, then runs
this (the package, flattened into one module at render time) under the user's Python 3.6+, standard
library only. Inputs from the environment the script sets: AIACC_RELEASE, AIACC_MIRROR_URL,
AIACC_COMMON_WHEEL, AIACC_FRAMEWORK (empty: every installed one), AIACC_DRY_RUN, AIACC_OFFLINE,
AIACC_UNINSTALL ("1" or ""), AIACC_CA_BUNDLE (a PEM file, or empty), and the tables of table.py."""
import os
import sys



def main():
    release = os.environ["AIACC_RELEASE"]
    wanted = os.environ.get("AIACC_FRAMEWORK", "")
    if os.environ.get("AIACC_UNINSTALL") == "1":
        say("AIACC-Training %s uninstaller (%s)" % (release, sys.executable))
        check_pip()
        uninstall([wanted] if wanted else [])
        return
    mirror = Mirror(os.environ["AIACC_MIRROR_URL"], os.environ.get("AIACC_CA_BUNDLE", ""))
    offline = os.environ.get("AIACC_OFFLINE") == "1"
    records = None if offline else read_manifest(mirror, release)
    chosen = detect_and_decide(None if records is None else published_paths(records))
    for path in [os.environ["AIACC_COMMON_WHEEL"]] + [cell.path for _, cell, _ in chosen]:
        say("wheel:      %s" % mirror.where(path))
    if records is not None:
        check_published(chosen, records)
    check_pip()
    check_prerequisites()
    if os.environ.get("AIACC_DRY_RUN") == "1":
        say("dry run: nothing was installed" + (" (offline: the mirror was not read)" if offline else ""))
        return
    install(chosen, mirror, release, records)


if __name__ == "__main__":
    main()
AIACC_INSTALLER_PY
