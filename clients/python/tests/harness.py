"""Connects the tests to the populate-worker that services/populate-worker's TestPythonClient
started: DROVER_URL and DROVER_TOKEN reach its API, and DROVER_FUNCTION_FD is the listening
socket its tables file points the test pipeline's function_urls at, which this process serves.
"""

import os
import socket
import time
import unittest
import urllib.request

import drover

from . import pipeline

_client = None
_server = None


def worker() -> drover.Client:
    """The client of the running worker, serving the test pipeline's makes on first use; skips
    the test when no worker was started for it."""
    global _client, _server
    if _client is not None:
        return _client
    url, token, fd = (os.environ.get(k) for k in ("DROVER_URL", "DROVER_TOKEN", "DROVER_FUNCTION_FD"))
    if not (url and token and fd):
        raise unittest.SkipTest("needs a populate-worker: run through `go test -run TestPythonClient` in services/populate-worker")
    _server = pipeline.pipeline.server(sock=socket.socket(fileno=int(fd))).start()
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=5) as resp:
                if resp.status == 200:
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"populate-worker at {url} not ready after 30 s")
        time.sleep(0.1)
    _client = drover.Client(url, token)
    return _client


def seed(client: drover.Client, signals: int) -> list[int]:
    """Inserts signals new example_signal rows (POST /v1/examples/seed) and returns their ids."""
    status, res = client._call("POST", "/v1/examples/seed", {"signals": signals})
    assert status == 201, status
    return res["signal_ids"]

