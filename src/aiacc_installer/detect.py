"""Detection: the frameworks installed for this Python (read from their metadata and files, never
imported), the CUDA each was built with, the NVIDIA driver, nvcc, the architecture, PEP 668."""
import os
import platform
import re
import sys
import sysconfig

from .common import major_minor, normalise, numbers, read, run
from .cuda_drivers import DRIVER_FOR_CUDA
from .table import FRAMEWORKS, framework_row


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
