"""The rendezvous store served by perseusrun (perseus/run/store.py): the ranks join it and none serves one; the
store process on its own (free port, engines of two threads join it, it ends when told)."""

import subprocess
import sys
import threading

import pytest

from engine_helpers import REPO_ROOT, base_env, perseusrun, reports

pytestmark = pytest.mark.integration  # starts processes or binds sockets (tests/support/fast_tier.py)


def test_perseusrun_serves_the_store_and_no_rank_does(engine_library):
    proc = perseusrun(engine_library, 4, "store_served")
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = reports(proc.stdout)
    assert len(found) == 4
    stores = {r["store"] for r in found}
    assert len(stores) == 1 and stores.pop().startswith("127.0.0.1:")
    for r in found:
        assert r["value"] == 10.0
        assert r["master_port_served"] is False  # rank 0 did not open PERSEUS_MASTER_PORT


def test_store_process_serves_engines_on_a_free_port_and_stops(engine_library, monkeypatch):
    monkeypatch.setenv("PERSEUS_ENGINE_LIBRARY", engine_library)
    monkeypatch.syspath_prepend(str(REPO_ROOT / "native" / "runtime"))
    from perseus import engine
    from perseus.run import store as served

    store, why = served.start()
    assert store is not None, why
    try:
        assert 0 < store.port < 65536
        results = {}

        def rank(r):
            with engine.Engine(r, 2, master_addr="127.0.0.1", master_port=store.port, serve_store=False,
                               timeout_seconds=20) as eng:
                import array
                buf = array.array("d", [r + 1.0])
                eng.allreduce("x", buf)
                results[r] = buf[0]

        threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert results == {0: 3.0, 1: 3.0}
    finally:
        store.stop()
    assert store.popen.returncode == 0


def test_store_process_without_an_engine_library_says_why(tmp_path):
    not_a_library = tmp_path / "libnothing.so"
    not_a_library.write_bytes(b"not an ELF file")
    env = base_env(str(not_a_library))
    proc = subprocess.run([sys.executable, "-m", "perseus.run.store"], env=env, input="", stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stdout.startswith("ERROR ") and "libnothing.so" in proc.stdout
