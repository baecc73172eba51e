"""The decision: one cell of the table per installed framework, explained; the nearest cells when
there is none."""
import os
import platform
import sys

from .common import fail, numbers, say
from .detect import driver, framework_cuda, host_arch, installed_frameworks, nvcc
from .table import FRAMEWORK_NAMES, load_table


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
