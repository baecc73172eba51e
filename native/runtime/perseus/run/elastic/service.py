"""The elastic driver's rendezvous service: one JSON line in, one JSON line out, a thread per connection.

Requests (perseus.horovod_kit.elastic_worker sends them):
    {"op": "join", "worker": ID, "last": GENERATION}  -> blocks until a later generation with ID in it is formed:
        {"generation", "rank", "size", "local_rank", "local_size", "node", "num_nodes", "store_host",
         "store_port", "updates", "env"}, or {"stop": REASON, "code": N} when the worker is not needed
    {"op": "updates", "since": N}                     -> {"counter": N, "removed_only": bool}
"""

import json
import socketserver
import threading
from typing import Any, Callable, Dict


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        line = self.rfile.readline()
        if not line:
            return
        try:
            request = json.loads(line.decode())
            answer = self.server.answer(request)  # type: ignore[attr-defined]
        except Exception as error:  # a malformed request: the worker is told, the service goes on
            answer = {"stop": "bad request to the elastic driver: {}".format(error), "code": 2}
        try:
            self.wfile.write(json.dumps(answer).encode() + b"\n")
        except OSError:
            pass  # the worker is gone (killed while it waited): nothing to tell it


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class Service:
    """Serves `answer(request) -> dict` on a free port of every interface until stop()."""

    def __init__(self, answer: Callable[[Dict[str, Any]], Dict[str, Any]]) -> None:
        self._server = _Server(("", 0), _Handler)
        self._server.answer = answer  # type: ignore[attr-defined]
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="perseusrun-elastic-service", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
