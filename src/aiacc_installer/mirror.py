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

from .common import fail, say

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
