# The installing half of install_AIACC-Training.sh, embedded after install_decide.py (one program, one
# namespace: it uses say/fail/installed_distributions/metadata_folders/detect_and_decide from there). Python 3.6+,
# standard library only. Extra inputs from the script: AIACC_DRY_RUN, AIACC_UNINSTALL ("1" or ""),
# AIACC_CA_BUNDLE (a PEM file, or empty).
#
# The order makes every failure leave the environment as it was: fetch the mirror's manifest, check it
# against the embedded table, download every wheel and verify size + sha256 BEFORE pip runs; back up
# the installed perseus distributions; let pip install the verified local files (--no-index
# --no-deps --require-hashes: no network, never the framework); check the import; on any failure
# after pip started, uninstall what was installed and put the backup back.
import csv
import hashlib
import ipaddress
import json
import shutil
import ssl
import tempfile
import time

try:
    from urllib.error import HTTPError, URLError
    from urllib.parse import quote, urlsplit
    from urllib.request import HTTPSHandler, ProxyHandler, Request, build_opener, url2pathname
except ImportError:  # pragma: no cover - Python 2 is refused by the shell part before this runs
    raise SystemExit("Python 3 is required")

PERSEUS_DISTRIBUTIONS = ("perseus-common",) + tuple(normalise(row["binding_distribution"]) for row in FRAMEWORKS)
RETRIES = 3
RETRY_DELAY_SECONDS = 1.0
TIMEOUT_SECONDS = 60
CHUNK = 1 << 20

# --- the mirror ------------------------------------------------------------------------------------

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


# --- the manifest against the embedded table -------------------------------------------------------

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


# --- what is installed, and its backup -------------------------------------------------------------

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


# --- pip -------------------------------------------------------------------------------------------

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


def indent(text):
    return "\n".join("    " + line for line in text.strip().splitlines()[-15:])


# --- install / uninstall ---------------------------------------------------------------------------

def install(chosen, mirror, release):
    common_path = os.environ["AIACC_COMMON_WHEEL"]
    manifest = mirror.read_json("manifest.json")
    records = check_manifest(manifest, load_table(), release, common_path)
    say("mirror:     %s (manifest of AIACC-Training %s agrees with this script)" % (mirror.location, release))

    paths = [common_path] + [cell.path for _, cell, _ in chosen]
    for path in paths[1:]:
        record = records[path]
        if record.get("status") != "built":
            fail("mirror_mismatch", "the mirror does not publish %s yet (%s): %s. Install from a mirror that "
                 "has it, or pass --framework for the others" % (path, record.get("status"), record.get("reason", "")))

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


def main():
    release = os.environ["AIACC_RELEASE"]
    wanted = os.environ.get("AIACC_FRAMEWORK", "")
    if os.environ.get("AIACC_UNINSTALL") == "1":
        say("AIACC-Training %s uninstaller (%s)" % (release, sys.executable))
        check_pip()
        uninstall([wanted] if wanted else [])
        return
    mirror = Mirror(os.environ["AIACC_MIRROR_URL"], os.environ.get("AIACC_CA_BUNDLE", ""))
    chosen = detect_and_decide()
    for path in [os.environ["AIACC_COMMON_WHEEL"]] + [cell.path for _, cell, _ in chosen]:
        say("wheel:      %s" % mirror.where(path))
    check_pip()
    check_prerequisites()
    if os.environ.get("AIACC_DRY_RUN") == "1":
        say("dry run: nothing was installed")
        return
    install(chosen, mirror, release)


if __name__ == "__main__":
    main()
