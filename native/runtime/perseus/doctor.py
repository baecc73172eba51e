"""`perseus doctor`: one report of everything a perseus job depends on, and what to install when it does
not match (ds_report and horovodrun --check-build in one).

It reports the detected launch environment (and the source of every number), the NVIDIA driver, the CUDA
runtime of each framework and the system CUDA toolkit, every installed framework with its build flags
(CUDA, C++ ABI, torch.distributed backends), the installed perseus wheels with their build manifests
(read as files: the compiled extensions are never imported here) and the launch tools. Frameworks are
probed in child processes, so a framework that crashes on import is reported instead of crashing this.

Exit code 1 when a problem of severity "error" (a mismatch) is found, 0 otherwise.
"""

import json
import os
import sys
from typing import Any, Dict, List, Optional

from perseus._doctor_probes import (BINDINGS, _distributions, _normal, _version_tuple, gather_cuda_toolkit, gather_driver,
                                    gather_frameworks, gather_launch, gather_perseus, gather_settings, gather_system,
                                    gather_tools)
from perseus._doctor_report import INSTALLER, PerseusWheel, Problem, Report
from perseus._cuda_drivers import MIN_DRIVER  # generated from matrix/facts/cuda_drivers.yaml
from perseus._frameworks import FRAMEWORKS
from perseus.horovod_kit.manifest import wheel_version

__all__ = ["Problem", "Report", "collect", "format_text", "main"]


def _cuda_words(cuda: Optional[str]) -> str:
    return "CUDA {}".format(cuda) if cuda else "CPU only"


def check_driver(report: Report) -> None:
    driver = report.driver.get("version")
    for name, fw in report.frameworks.items():
        cuda = fw.get("cuda") if isinstance(fw.get("cuda"), str) and fw.get("cuda") != "yes" else None
        if not cuda:
            continue
        if driver is None:
            report.warn("{} {} is a {} build but there is no NVIDIA driver: it runs on CPU only".format(name, fw.get("version"), _cuda_words(cuda)),
                        "install the NVIDIA driver (>= {} for CUDA {}) to train on GPUs".format(_min_driver(cuda) or "?", cuda))
            continue
        needed = _min_driver(cuda)
        if needed and _version_tuple(driver) < _version_tuple(needed):
            report.error("NVIDIA driver {} is older than CUDA {} of {} {} needs (>= {})".format(driver, cuda, name, fw.get("version"), needed),
                         "upgrade the driver to >= {}, or install the {} build made for an older CUDA".format(needed, name))
    for row in FRAMEWORKS:
        fw = report.frameworks.get(row["name"])
        if driver and fw is not None and "import_error" not in fw and fw.get("cuda") is None:
            report.warn("an NVIDIA driver ({}) is present but {} {} is CPU only".format(driver, row["name"], fw.get("version")),
                        "install a CUDA build of {}, then the matching {} ({})".format(row["name"], row["binding_distribution"], INSTALLER))


def _min_driver(cuda: str) -> Optional[str]:
    version = _version_tuple(cuda)[:2]
    best = None
    for (major, minor), driver in MIN_DRIVER:
        if version[0] == major and (major >= 11 or version[1] == minor):
            best = driver
    return best


def check_perseus(report: Report) -> None:
    common = [w for w in report.perseus if _normal(w.name) == "perseus-common"]
    from perseus.run.args import _version

    release = common[0].version if common else _version()
    by_name: Dict[str, List[PerseusWheel]] = {}
    for wheel in report.perseus:
        by_name.setdefault(_normal(wheel.name), []).append(wheel)
    for name, wheels in by_name.items():
        if len(wheels) > 1:
            report.error("{} is installed {} times: {}".format(name, len(wheels), "; ".join("{} in {}".format(w.version, w.location) for w in wheels)),
                         "uninstall the copies you do not use (pip uninstall {}; check PYTHONPATH)".format(name))
    frameworks = [w for w in report.perseus if _normal(w.name) != "perseus-common"]
    if not frameworks:
        report.warn("no perseus framework wheel ({}) is installed".format(", ".join(r["binding_distribution"] for r in FRAMEWORKS)),
                    "run bash {} to install the one for your framework, CUDA and Python".format(INSTALLER))
    for wheel in frameworks:
        framework = BINDINGS.get(_normal(wheel.name), _normal(wheel.name)[len("perseus-"):])
        wheel_release = wheel.version.split("+")[0]
        if wheel_release != release:
            report.error("{} {} is of release {} but perseus-common is {}".format(wheel.name, wheel.version, wheel_release, release),
                         "install perseus-common=={} (pip install perseus-common=={})".format(wheel_release, wheel_release))
        fw = report.frameworks.get(framework)
        manifest = wheel.manifest
        for part in _missing_parts(wheel):
            report.error("{} {} lacks {}, a part its build manifest lists (the {} MPI bootstrap plugin: a plain "
                         "mpirun of that MPI cannot start a job)".format(wheel.name, wheel.version, part, _plugin_mpi(part)),
                         "reinstall it: pip install --force-reinstall --no-deps {}=={}".format(wheel.name, wheel.version))
        if fw is None:
            built = manifest.get("{}_version".format(framework)) if manifest else wheel.version.partition("+")[2]
            report.error("{} {} is installed but {} is not".format(wheel.name, wheel.version, framework),
                         "pip install {}=={} (the version it was built for), or pip uninstall {}".format(framework, (built or "").split("+")[0], wheel.name))
            continue
        if manifest is None or "import_error" in fw:
            continue
        differences = _manifest_differences(framework, manifest, fw)
        if differences:
            report.error("{} {} was built for another environment: {}".format(wheel.name, wheel.version, "; ".join(differences)),
                         "install {} {} built for {} and cp{}{} (bash {} picks it)".format(
                             wheel.name, wheel_version(release, str(fw.get("version", ""))), _cuda_words(fw.get("cuda")), sys.version_info[0], sys.version_info[1], INSTALLER))


def _plugin_mpi(part: str) -> str:
    return part[len("libperseus_mpi_"):-len(".so")] if part.startswith("libperseus_mpi_") else part


def _parts(wheel: PerseusWheel) -> List[str]:
    """The parts a framework wheel's build manifest lists beside its library (the MPI bootstrap plugins)."""
    return list((wheel.manifest or {}).get("mpi_plugins") or [])


def _missing_parts(wheel: PerseusWheel) -> List[str]:
    if not wheel.manifest_path:
        return []
    folder = os.path.dirname(wheel.manifest_path)
    return [part for part in _parts(wheel) if not os.path.isfile(os.path.join(folder, part))]


def _manifest_differences(framework: str, manifest: Dict[str, Any], fw: Dict[str, Any]) -> List[str]:
    """What differs between a wheel's build manifest and the running framework / interpreter (the same
    comparison perseus.<framework> makes when it loads its library)."""
    found = []
    built_version = manifest.get("{}_version".format(framework))
    if built_version is not None and built_version != fw.get("version"):
        found.append("{} {} (built) vs {} (installed)".format(framework, built_version, fw.get("version")))
    key = "{}_cuda".format(framework)
    if key in manifest and (manifest[key] or None) != (fw.get("cuda") or None):
        found.append("{} (built) vs {} (installed)".format(_cuda_words(manifest[key]), _cuda_words(fw.get("cuda"))))
    if "cxx11_abi" in manifest and fw.get("cxx11_abi") is not None and bool(manifest["cxx11_abi"]) != bool(fw["cxx11_abi"]):
        words = {True: "cxx11 ABI", False: "pre-cxx11 ABI"}
        found.append("{} (built) vs {} ({})".format(words[bool(manifest["cxx11_abi"])], words[bool(fw["cxx11_abi"])], framework))
    running_tag = "cp{}{}".format(*sys.version_info[:2])
    if manifest.get("python_tag") not in (None, running_tag, "py2.py3", "py3"):
        found.append("Python {} (built) vs {} (running)".format(manifest["python_tag"], running_tag))
    return found


def check_torch_distributed(report: Report) -> None:
    torch = report.frameworks.get("torch")
    if not torch or "import_error" in torch:
        return
    if not torch.get("distributed"):
        report.error("torch {} was built without torch.distributed".format(torch.get("version")),
                     "install an official torch build (pip install torch=={})".format(str(torch.get("version")).split("+")[0]))
    elif not torch.get("gloo"):
        report.error("torch {} has no Gloo backend (perseus uses it for CPU tensors and rendezvous)".format(torch.get("version")),
                     "install an official torch build with Gloo")


def collect() -> Report:
    report = Report()
    dists = _distributions()
    gather_settings(report)
    gather_launch(report)
    gather_driver(report)
    gather_cuda_toolkit(report)
    gather_frameworks(report, dists)
    gather_perseus(report, dists)
    gather_tools(report)
    gather_system(report)
    check_driver(report)
    check_perseus(report)
    check_torch_distributed(report)
    return report


# -- printing ---------------------------------------------------------------------------------------------

def format_text(report: Report) -> str:
    lines = ["perseus doctor"]
    lines.append("\nlaunch environment")
    if "error" in report.launch:
        lines.append("  error: " + report.launch["error"])
    else:
        sources = report.launch.get("sources", {})
        lines.append("  launcher: {}".format(report.launch.get("launcher")))
        for key in ("rank", "size", "local_rank", "local_size", "node_rank", "master_addr", "master_port"):
            lines.append("  {:<12} {:<16} <- {}".format(key + ":", str(report.launch.get(key)), sources.get(key, "")))
        if sources.get("outer_launchers"):
            lines.append("  started inside: " + sources["outer_launchers"])
    lines.append("\nperseus settings (PERSEUS_*, GLOO_TIMEOUT_SECONDS)")
    for setting in report.settings:
        lines.append("  {:<34} {:<10} {}".format(setting["name"], setting["value"], setting["source"]))
    lines.append("\nNVIDIA driver")
    lines.append("  version: {}  ({})".format(report.driver.get("version") or "none", report.driver.get("source")))
    lines.append("\nCUDA toolkit")
    lines.append("  version: {}  home: {}  nvcc: {}".format(report.cuda_toolkit.get("version") or "none",
                                                           report.cuda_toolkit.get("home") or "none", report.cuda_toolkit.get("nvcc") or "none"))
    lines.append("\nframeworks")
    if not report.frameworks:
        lines.append("  none installed ({})".format(", ".join(r["name"] for r in FRAMEWORKS)))
    for name, fw in report.frameworks.items():
        if "import_error" in fw:
            lines.append("  {} {}: does not import ({})".format(name, fw["distribution_version"], fw["import_error"]))
            continue
        abi = {True: "cxx11 ABI", False: "pre-cxx11 ABI", None: "ABI n/a"}[fw.get("cxx11_abi")]
        extra = ""
        if name == "torch":
            extra = ", distributed: gloo={} nccl={} mpi={}, cuda available: {} ({} devices)".format(
                fw.get("gloo"), fw.get("nccl"), fw.get("mpi"), fw.get("cuda_available"), fw.get("devices"))
        lines.append("  {} {}: {}, {}{}".format(name, fw.get("version"), _cuda_words(fw.get("cuda") if fw.get("cuda") != "yes" else "(yes)"), abi, extra))
    lines.append("\nperseus wheels")
    for w in report.perseus:
        lines.append("  {} {}  ({})".format(w.name, w.version, w.location))
        if w.manifest:
            m = w.manifest
            fw = _normal(w.name)[len("perseus-"):]
            lines.append("    built for {} {}, {}, {}, {}, compiler {}".format(
                fw, m.get("{}_version".format(fw)), _cuda_words(m.get("{}_cuda".format(fw))),
                "cxx11 ABI" if m.get("cxx11_abi") else "pre-cxx11 ABI", m.get("python_tag"),
                " ".join(str(v) for v in (m.get("compiler") or {}).values()) or "?"))
            parts = _parts(w)
            if parts:
                missing = set(_missing_parts(w))
                headers = m.get("mpi_headers") or {}
                lines.append("    parts: {}".format(", ".join(
                    "{} ({}{})".format(part, "MISSING; " if part in missing else "",
                                       headers.get(_plugin_mpi(part)) or "MPI bootstrap plugin") for part in parts)))
            lines.append("    manifest: {}".format(w.manifest_path))
    if not report.perseus:
        lines.append("  none found")
    lines.append("\ntools")
    for key, value in report.tools.items():
        lines.append("  {}: {}".format(key, value or "not found"))
    lines.append("\nsystem")
    for key, value in report.system.items():
        lines.append("  {}: {}".format(key, value))
    lines.append("")
    if not report.problems:
        lines.append("no problems found")
    for p in report.problems:
        lines.append("{}: {}".format(p.severity.upper(), p.what))
        lines.append("  fix: {}".format(p.fix))
    return "\n".join(lines)


def main(as_json: bool = False) -> int:
    report = collect()
    print(json.dumps(report.to_dict(), indent=2) if as_json else format_text(report))
    return 0 if report.ok else 1
