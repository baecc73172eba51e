# The decision half of install_AIACC-Training.sh, embedded in it by `aiacc-build render`.
# It runs under the user's Python (3.6 or newer: no walrus, no f-string `=`, no capture_output) and
# reads its inputs from the environment the script sets: AIACC_CELL_TABLE (one line per cell:
# framework version cuda|cpu python|any arch folder/file), AIACC_RELEASE, AIACC_MIRROR_URL,
# AIACC_FRAMEWORK (empty: every installed one), AIACC_EXIT_CODES ("name=code ..."), AIACC_FRAMEWORKS
# (JSON: one row per framework adapter of the build tool: its distributions and how to find its CUDA).
# It detects the Python, the installed frameworks and the CUDA they were built with (then the
# driver, then nvcc), picks one cell per framework and explains it. install_apply.py (embedded after
# it) fetches, verifies and installs what it chose.
import json
import os
import platform
import re
import subprocess
import sys
import sysconfig

EXIT = dict(item.split("=") for item in os.environ.get("AIACC_EXIT_CODES", "").split())
FRAMEWORKS = json.loads(os.environ.get("AIACC_FRAMEWORKS") or "[]")
FRAMEWORK_NAMES = tuple(row["name"] for row in FRAMEWORKS)
# Minimum Linux driver of each CUDA toolkit (CUDA release notes, "CUDA Toolkit and Driver Versions").
DRIVER_FOR_CUDA = (
    ("13.0", "580.65.06"), ("12.9", "575.51.03"), ("12.8", "570.26"), ("12.6", "560.28.03"),
    ("12.5", "555.42.02"), ("12.4", "550.54.14"), ("12.3", "545.23.06"), ("12.2", "535.54.03"),
    ("12.1", "530.30.02"), ("12.0", "525.60.13"), ("11.8", "520.61.05"), ("11.7", "515.43.04"),
    ("11.6", "510.39.01"), ("11.5", "495.29.05"), ("11.4", "470.42.01"), ("11.3", "465.19.01"),
    ("11.2", "460.27.03"), ("11.1", "455.23"), ("11.0", "450.36.06"), ("10.2", "440.33"),
    ("10.1", "418.39"), ("10.0", "410.48"),
)


def say(text=""):
    sys.stdout.write(text + "\n")


def fail(code_name, text):
    sys.stderr.write("error: " + text + "\n")
    sys.exit(int(EXIT[code_name]))


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


def load_table():
    cells = []
    for line in os.environ["AIACC_CELL_TABLE"].splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            cells.append(Cell(line))
    return cells


# --- detection -------------------------------------------------------------------------------------

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


def normalise(name):
    return re.sub(r"[-_.]+", "-", name).lower()


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


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except (IOError, OSError):
        return None


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


def framework_row(name):
    return next(row for row in FRAMEWORKS if row["name"] == name)


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


def run(command):
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        out, _ = proc.communicate(timeout=20)
        return out if proc.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


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


# --- decision --------------------------------------------------------------------------------------

def python_fits(cell, python):
    return cell.python in ("any", python)


def nearest(cells, framework, version, accel, python, arch, limit=5):
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
    same = [c for c in cells if c.framework == framework]
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


def detect_and_decide():
    """Detect, decide and explain: [(framework, cell, how the CUDA was picked)], one per framework to install."""
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
            lines = ["  " + c.describe() + "  (" + c.path + ")" for c in nearest(cells, framework, public, accel, python, arch)]
            problems.append("AIACC-Training %s has no build for %s %s, %s, Python %s, %s.\n nearest supported cells:\n%s"
                            % (release, framework, public, built, python, arch, "\n".join(lines) or "  (none)"))
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
