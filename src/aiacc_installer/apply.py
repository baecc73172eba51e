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

from .common import fail, indent, normalise, run, say
from .environment import Backup, installed_perseus, missing_requirements, pip, pip_install_verified, wheel_project, wheel_version
from .table import framework_row


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
