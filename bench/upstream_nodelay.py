#!/usr/bin/env python3
"""tests/upstream/upstream.py, its connections with TCP_NODELAY: as model servers set it (uvicorn,
vLLM, llama.cpp's), so a streamed token goes out when it is written.

The test upstream writes a stream's events one small write at a time without TCP_NODELAY, so
Nagle's algorithm holds a token while an earlier write is unacknowledged, until the reader's
delayed ACK (about 40 ms on Linux): measured from the upstream's own `first_token` stamp, every
first token then seems to reach the client ~40 ms late (docs/STREAMING.md). Same flags as
upstream.py:

    python3 bench/upstream_nodelay.py --port 0 --latency-ms 200 --stream-ms 1800
"""

import importlib.util
import pathlib
import socket

PATH = pathlib.Path(__file__).resolve().parent.parent / "tests" / "upstream" / "upstream.py"
spec = importlib.util.spec_from_file_location("upstream", PATH)
upstream = importlib.util.module_from_spec(spec)
spec.loader.exec_module(upstream)
plain_setup = upstream.Handler.setup


def setup(self):
    plain_setup(self)
    self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


upstream.Handler.setup = setup

if __name__ == "__main__":
    upstream.main()
