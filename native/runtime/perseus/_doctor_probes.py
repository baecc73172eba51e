"""`perseus doctor`'s probes: what is installed and set up (launch environment, driver, CUDA, frameworks
probed in child processes, perseus wheels and their manifests read as files, tools, system, PERSEUS_*
settings), written into the report; the checks across them are in doctor.py."""

import json
import os
import platform
import re
import shutil
import subprocess
import sys
from typing import Any, Dict, List, Optional, Tuple

from perseus import config, horovod_variables, variable_names
from perseus._doctor_report import INSTALLER, PerseusWheel, Report
from perseus._frameworks import FRAMEWORKS

PROBE_TIMEOUT_SECONDS = 180

# What doctor knows of each framework (distributions, probe, binding wheel) is the build tool's framework
# adapters', generated into perseus/_frameworks.py; each probe prints one JSON object and runs as
# `python -c PROBE`, so that a broken framework cannot crash the report.
BINDINGS = {row["binding_distribution"].replace("_", "-"): row["name"] for row in FRAMEWORKS}


def _framework_distribution(row: Dict[str, Any], installed: Dict[str, str]) -> Optional[str]:
    """The installed distribution (normalised name) that provides this framework, if any."""
    for name in row["distributions"]:
        if name in installed:
            return name
    pattern = row["distribution_pattern"]
    if pattern:
        return next((n for n in sorted(installed) if re.fullmatch(pattern, n)), None)
    return None


# -- gathering --------------------------------------------------------------------------------------------

def _run(argv: List[str], timeout: float = 20) -> Optional[str]:
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _version_tuple(text: str) -> Tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


def gather_launch(report: Report) -> None:
    from perseus.launch import LaunchEnvironmentError, detect

    try:
        report.launch = detect().to_dict()
    except LaunchEnvironmentError as exc:
        report.launch = {"error": str(exc)}
        report.error("launch environment: {}".format(exc), "unset the stale launcher variables, or start the job with one launcher")


def gather_driver(report: Report) -> None:
    try:
        with open("/proc/driver/nvidia/version") as f:
            text = f.read()
        match = re.search(r"Kernel Module\s+(?:for\s+\S+\s+)?(\d+\.\d+(?:\.\d+)?)", text)
        report.driver = {"version": match.group(1) if match else None, "source": "/proc/driver/nvidia/version"}
    except OSError:
        out = _run(["nvidia-smi", "--query-gpu=driver_version,name", "--format=csv,noheader"]) if shutil.which("nvidia-smi") else None
        if out and out.strip():
            first = out.strip().splitlines()[0].split(",")
            report.driver = {"version": first[0].strip(), "gpus": [l.split(",", 1)[-1].strip() for l in out.strip().splitlines()],
                             "source": "nvidia-smi"}
        else:
            report.driver = {"version": None, "source": "no /proc/driver/nvidia/version and no nvidia-smi: no NVIDIA driver"}
    gpus_dir = "/proc/driver/nvidia/gpus"
    if os.path.isdir(gpus_dir):
        report.driver["gpu_count"] = len(os.listdir(gpus_dir))


def gather_cuda_toolkit(report: Report) -> None:
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    version = None
    try:
        with open(os.path.join(home, "version.json")) as f:
            version = json.load(f).get("cuda", {}).get("version")
    except (OSError, ValueError):
        try:
            with open(os.path.join(home, "version.txt")) as f:
                found = re.search(r"(\d+\.\d+(?:\.\d+)?)", f.read())
                version = found.group(1) if found else None
        except OSError:
            pass
    nvcc = shutil.which("nvcc") or (os.path.join(home, "bin", "nvcc") if os.path.exists(os.path.join(home, "bin", "nvcc")) else None)
    if version is None and nvcc:
        out = _run([nvcc, "--version"]) or ""
        found = re.search(r"release (\d+\.\d+)", out)
        version = found.group(1) if found else None
    report.cuda_toolkit = {"home": home if os.path.isdir(home) else None, "version": version, "nvcc": nvcc}


def _distributions() -> List[Tuple[str, str, str, List[str]]]:
    """(name, version, location, files relative to location) of every installed distribution."""
    found = []
    try:
        from importlib import metadata
    except ImportError:  # Python 3.6 / 3.7
        try:
            import importlib_metadata as metadata  # type: ignore
        except ImportError:
            metadata = None
    if metadata is not None:
        for dist in metadata.distributions():
            name = dist.metadata["Name"] or ""
            location = str(dist.locate_file(""))
            files = [str(f) for f in (dist.files or [])]
            found.append((name, dist.version, location, files))
        return found
    import pkg_resources

    for dist in pkg_resources.working_set:
        files = []
        if dist.has_metadata("RECORD"):
            files = [line.split(",")[0] for line in dist.get_metadata_lines("RECORD")]
        found.append((dist.project_name, dist.version, dist.location, files))
    return found


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def gather_frameworks(report: Report, dists: List[Tuple[str, str, str, List[str]]]) -> None:
    installed = {_normal(name): version for name, version, _, _ in dists}
    for row in FRAMEWORKS:
        module = row["name"]
        dist_name = _framework_distribution(row, installed)
        if dist_name is None:
            continue
        entry: Dict[str, Any] = {"distribution": dist_name, "distribution_version": installed[_normal(dist_name)]}
        try:
            proc = subprocess.run([sys.executable, "-c", row["doctor_probe"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  universal_newlines=True, timeout=PROBE_TIMEOUT_SECONDS)
            if proc.returncode == 0:
                entry.update(json.loads(proc.stdout.strip().splitlines()[-1]))
            else:
                entry["import_error"] = (proc.stderr.strip().splitlines() or ["exit code {}".format(proc.returncode)])[-1]
        except subprocess.TimeoutExpired:
            entry["import_error"] = "import took longer than {} s".format(PROBE_TIMEOUT_SECONDS)
        report.frameworks[module] = entry
        if "import_error" in entry:
            report.error("{} {} is installed but does not import: {}".format(module, entry["distribution_version"], entry["import_error"]),
                         "reinstall {} (pip install --force-reinstall {}=={})".format(module, dist_name, entry["distribution_version"]))


def _find_manifest(files: List[str], location: str, framework: str) -> Optional[str]:
    suffix = "perseus/{}/build_manifest.json".format(framework)
    for f in files:
        if f.replace(os.sep, "/").endswith(suffix):
            return os.path.normpath(os.path.join(location, f))
    import perseus

    for directory in getattr(perseus, "__path__", []):
        candidate = os.path.join(directory, framework, "build_manifest.json")
        if os.path.exists(candidate):
            return candidate
    return None


def gather_perseus(report: Report, dists: List[Tuple[str, str, str, List[str]]]) -> None:
    for name, version, location, files in dists:
        normal = _normal(name)
        if not normal.startswith("perseus-"):
            continue
        wheel = PerseusWheel(name, version, location)
        framework = BINDINGS.get(normal)
        if framework is not None:
            wheel.manifest_path = _find_manifest(files, location, framework)
            if wheel.manifest_path is None:
                report.error("{} {} has no perseus/{}/build_manifest.json".format(name, version, framework),
                             "reinstall {} from the wheel for your {} ({})".format(name, framework, INSTALLER))
            else:
                try:
                    with open(wheel.manifest_path) as f:
                        wheel.manifest = json.load(f)
                except (OSError, ValueError) as exc:
                    report.error("{}: cannot read its build manifest {} ({})".format(name, wheel.manifest_path, exc),
                                 "reinstall {} ({})".format(name, INSTALLER))
        report.perseus.append(wheel)


def _which(name: str) -> Optional[str]:
    """On PATH, or next to this interpreter (a virtual environment's bin/ need not be on PATH)."""
    beside = os.path.join(os.path.dirname(sys.executable), name)
    return shutil.which(name) or (beside if os.access(beside, os.X_OK) else None)


def gather_tools(report: Report) -> None:
    mpirun = shutil.which("mpirun")
    version = None
    if mpirun:
        out = _run([mpirun, "--version"]) or ""
        version = out.strip().splitlines()[0] if out.strip() else None
    report.tools = {"perseusrun": _which("perseusrun"), "mpirun": mpirun, "mpirun_version": version,
                    "ssh": shutil.which("ssh"), "torchrun": _which("torchrun"), "horovodrun": _which("horovodrun")}


def gather_system(report: Report) -> None:
    libc = platform.libc_ver()
    gcc = _run(["gcc", "--version"]) if shutil.which("gcc") else None
    report.system = {"python": "{} ({})".format(platform.python_version(), sys.executable), "platform": platform.platform(),
                     "glibc": " ".join(libc) if libc[0] else "unknown", "gcc": gcc.splitlines()[0] if gcc else "not installed"}


# -- checking ---------------------------------------------------------------------------------------------


def gather_settings(report: Report, environ: Optional[Dict[str, str]] = None) -> None:
    """Every PERSEUS_* variable (and GLOO_TIMEOUT_SECONDS) with its value and where it comes from; an
    invalid value is an error with the runtime's own message, an unknown name a warning."""
    environ = dict(os.environ) if environ is None else environ
    try:
        current = config.load(environ)
    except config.ConfigError as exc:
        report.error(str(exc), "fix or unset it: the job's ranks refuse to start with it")
        current = None
    for spec in config.VARIABLES:
        set_as = next((n for n in (spec.name,) + spec.aliases if environ.get(n, "").strip()), None)
        if current is not None:
            value = config.show(getattr(current, spec.field))
        else:  # the value as written (one of them is invalid)
            value = environ[set_as].strip() if set_as else config.show(spec.default)
        source = "default" if set_as is None else ("environment" if set_as == spec.name else "environment ({})".format(set_as))
        if set_as == spec.name and spec.name in horovod_variables.TRANSLATED:
            source = "environment ({})".format(horovod_variables.TRANSLATED[spec.name])
        report.settings.append({"name": spec.name, "value": value, "source": source,
                                "honoured_by": list(spec.honoured_by), "since": spec.since})
    for name, close in variable_names.unknown_variables(environ):
        report.warn("{} is set but perseus has no such variable, so it changes nothing".format(name),
                    "rename it to {}".format(close) if close else "unset it (`perseus doctor` lists every variable)")
    for note in variable_names.alias_notes(environ):
        report.warn(note, "use the documented name")
    try:
        readings = horovod_variables.read(environ)
    except config.ConfigError as exc:
        report.error(str(exc), "fix or unset it: the job's ranks refuse to start with it")
        readings = []
    for reading in readings:
        if reading.warning:
            report.warn(reading.warning, "unset it, or use the PERSEUS_* setting it names")
