"""The rendezvous store perseusrun serves for the jobs it launches (or rank 0 serves it: see below).

When the master host is this machine, perseusrun starts the engine's TCP key-value store
(perseus_engine_store_serve, the same store rank 0 would serve) in a child process on a free port, before any
rank starts, and gives every rank PERSEUS_STORE_ADDR=MASTER_ADDR:port; the engine's ranks then connect to it
and none serves one. So the store outlives any rank (rank 0 included), and no port is picked by one process
and bound by another. A child process rather than a thread: perseusrun forks the ranks afterwards, which must
not happen while threads of a C++ library may hold locks. The store ends when perseusrun closes the child's
stdin (or dies: the child gets SIGKILL then). Without the engine library (a binding built without it) nothing
is started and rank 0 serves as before. The library: PERSEUS_ENGINE_LIBRARY, perseus-common's own, else the
engine module an installed binding carries (perseus_torch's _perseus_engine.so holds the engine and no torch
code, so the child loads it without torch).

    python -m perseus.run.store    # prints "PORT <n>" (or "ERROR <why>"), serves until stdin closes
"""

import ctypes
import subprocess
import sys
from typing import Optional, Tuple

VARIABLE = "PERSEUS_STORE_ADDR"
START_SECONDS = 30.0


class StoreProcess:
    """The child serving the store; stop() ends it."""

    def __init__(self, popen: "subprocess.Popen", port: int) -> None:
        self.popen = popen
        self.port = port

    def stop(self) -> None:
        if self.popen.poll() is None:
            try:
                self.popen.stdin.close()
                self.popen.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.popen.kill()
                self.popen.wait()
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if stream is not None and not stream.closed:
                stream.close()


BINDING_ENGINE_FILE = "_perseus_engine.so"  # a binding's engine module (perseus_torch's), framework-free


def engine_library() -> Optional[str]:
    """The engine library the store child loads, or None when this installation has none."""
    import glob
    import os

    import perseus
    from perseus.engine import _library

    if os.environ.get(_library.LIBRARY_ENV):
        return os.environ[_library.LIBRARY_ENV]
    if os.path.isfile(_library.PACKAGED):
        return _library.PACKAGED
    for directory in perseus.__path__:
        found = sorted(glob.glob(os.path.join(directory, "*", BINDING_ENGINE_FILE)))
        if found:
            return found[0]
    return None


def start() -> Tuple[Optional[StoreProcess], Optional[str]]:
    """(the serving child, None), or (None, why the ranks' rank 0 serves the store instead; None when this
    installation has no engine library at all: nothing to say to a job that cannot use the engine)."""
    import os

    from perseus.engine import _library

    from .children import die_with_parent

    library = engine_library()
    if library is None:
        return None, None

    popen = subprocess.Popen([sys.executable, "-m", "perseus.run.store"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                             env=dict(os.environ, **{_library.LIBRARY_ENV: library}),
                             start_new_session=True, preexec_fn=die_with_parent)
    line = popen.stdout.readline().strip()  # the child answers at once: a bind on port 0 cannot wait
    if line.startswith("PORT "):
        return StoreProcess(popen, int(line[len("PORT "):])), None
    popen.stdin.close()
    popen.wait()
    why = line[len("ERROR "):] if line.startswith("ERROR ") else (line or popen.stderr.read().strip()[-500:])
    popen.stdout.close()
    popen.stderr.close()
    return None, why


def _serve() -> int:
    from perseus.engine import _library

    try:
        lib = _library.load()
    except Exception as exc:  # EngineLibraryError, or perseus.config refusing PERSEUS_ENGINE_LIBRARY
        print("ERROR " + str(exc).replace("\n", " "), flush=True)
        return 1
    handle = ctypes.c_void_p()
    if lib.perseus_engine_store_serve(b"", 0, ctypes.byref(handle)) != 0:
        print("ERROR " + lib.perseus_engine_last_error().decode("utf-8", "replace"), flush=True)
        return 1
    print("PORT {}".format(lib.perseus_engine_store_port(handle)), flush=True)
    sys.stdin.read()  # until perseusrun closes it
    lib.perseus_engine_store_stop(handle)
    return 0


if __name__ == "__main__":
    sys.exit(_serve())
