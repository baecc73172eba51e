"""recipes/caffe/build.sh fetches bullseye's Caffe source from a list of archives (deb.debian.org, then
archive.debian.org and snapshot.debian.org once bullseye moves): an archive that fails or serves other bytes
is passed over, and only a tarball with the pinned sha256 is ever unpacked.

The archives are served here from 127.0.0.1 (the real tarball, at its Debian pool path, and a tampered one):
archive.debian.org and snapshot.debian.org do not resolve on this network."""

import re
import shutil
import socket
import subprocess
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from caffe_helpers import RECIPE

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)

SCRIPT = RECIPE.read_text()
ORIG = "caffe_1.0.0+git20180821.99bd997.orig.tar.gz"
POOL = "pool/main/c/caffe"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture()
def archive_server(tmp_path):
    """An HTTP archive root on 127.0.0.1 (a free port); yields (root folder, URL)."""
    root = tmp_path / "archive"
    root.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield root, "http://127.0.0.1:{}".format(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def closed_port_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    return "http://127.0.0.1:{}/debian".format(port)


def fetch(cache: Path, archives: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "CAFFE_CACHE_DIR": str(cache), "CAFFE_SOURCE_ARCHIVES": archives}
    return subprocess.run(["bash", str(RECIPE), "source"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=300)


def test_the_default_archives_are_debian_then_its_archive_then_a_snapshot():
    block = re.search(r'DEFAULT_ARCHIVES="([^"]*)"', SCRIPT).group(1).splitlines()
    assert [line.split()[0] for line in block] == [
        "http://deb.debian.org/debian", "http://archive.debian.org/debian",
        "http://snapshot.debian.org/archive/debian/20250101T000000Z"]
    assert all(line.split()[1] == "bullseye" for line in block)


def test_a_failing_archive_falls_back_to_the_next_with_the_same_sha256(caffe_source, archive_server, tmp_path):
    root, url = archive_server
    real = caffe_source.parent / "sources" / ORIG
    (root / POOL).mkdir(parents=True)
    shutil.copyfile(str(real), str(root / POOL / ORIG))
    proc = fetch(tmp_path / "cache", "{} bullseye\n{} bullseye\n".format(closed_port_url(), url))
    assert proc.returncode == 0, proc.stderr
    assert "{} from {}/{}/{}".format(ORIG, url, POOL, ORIG) in proc.stderr
    tree = Path(proc.stdout.strip().splitlines()[-1])
    assert (tree / ".checked").is_file() and (tree / "src" / "caffe" / "solver.cpp").is_file()
    assert (tmp_path / "cache" / "sources" / ORIG).read_bytes() == real.read_bytes()


def test_an_archive_with_other_bytes_is_refused(caffe_source, archive_server, tmp_path):
    root, url = archive_server
    real = (caffe_source.parent / "sources" / ORIG).read_bytes()
    (root / POOL).mkdir(parents=True)
    (root / POOL / ORIG).write_bytes(real[:-16] + b"\0" * 16)  # same size, other bytes
    proc = fetch(tmp_path / "cache", "{} bullseye\n".format(url))
    assert proc.returncode != 0
    assert "does not have the pinned sha256" in proc.stderr
    assert "could not be fetched from any of: {}".format(url) in proc.stderr and "CAFFE_SOURCE_ARCHIVES" in proc.stderr
    assert not (tmp_path / "cache" / "sources" / ORIG).exists()
    assert not list((tmp_path / "cache").glob("source-*"))
