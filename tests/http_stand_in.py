"""A real HTTP server on a free local port, served from a thread, for tests that talk to one."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None) -> Iterator[str]:
    """``handler`` served on 127.0.0.1 at a free port (behind ``tls`` when given) until the block ends.

    Yields the server's base URL; the server is shut down and closed when the block ends.
    """
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    # shutdown() returns once serve_forever next looks at its flag: every 0.5 s by default, 50 ms here.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(timeout=5)
        server.server_close()
