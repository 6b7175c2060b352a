"""Makes written as Python functions, served as populate-worker HTTP function makes.

populate-worker makes a key of a table whose definition has a ``function_url`` by POSTing
``{"table": name, "key": {column: value, ...}}`` to that URL. The function answers status 200
with ``{"rows": [{column: value, ...}, ...]}`` (key columns may be left out: the worker fills them
in from the key) or, with any status, ``{"error": {"class", "message", "stack"}}``, which the
worker records in the jobs table as ``"<class>: <message>"`` with the stack. The worker inserts
the rows, in the transaction that finishes the job, itself: a make computes, it never writes the
target table.

Every call is signed by the worker (see :mod:`drover.signature`); the server refuses a call that
is unsigned, signed with another secret or older than five minutes with 401 and a problem+json
document, before any make runs.
"""

from __future__ import annotations

import json
import socket
import threading
import traceback
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Callable, Iterable
from urllib.parse import quote, unquote

from .signature import HEADER, SECRET_ENV, SignatureError, secrets_from_env, verify

if TYPE_CHECKING:
    from .client import Client

Key = dict[str, Any]
Row = dict[str, Any]
MakeFunc = Callable[[Key], "Row | Iterable[Row]"]

# Largest request body a function accepts; a key is small.
MAX_REQUEST = 1 << 20


@dataclass
class ComputedTable:
    """A computed table whose make is a Python function.

    The fields are populate-worker's table definition (an entry of its TABLES_FILE): ``name`` is
    how the API and the jobs table name it, ``target`` the table the rows go to, ``primary_key``
    its key columns, ``key_source`` the SQL producing every key that should exist, ``upstream``
    the tables key_source reads (inserts there schedule keys, deletes clean jobs up),
    ``secret_env`` the worker's variable holding this table's own signing secret, if it has one,
    ``auto_schedule`` False to schedule keys only when asked (DataJoint's explicit model).
    """

    name: str
    target: str
    primary_key: list[str]
    key_source: str
    make: MakeFunc
    upstream: list[str] = field(default_factory=list)
    secret_env: str | None = None
    auto_schedule: bool | None = None

    def definition(self, base_url: str) -> dict[str, Any]:
        """The table's entry in populate-worker's TABLES_FILE, its make served under base_url."""
        d: dict[str, Any] = {
            "name": self.name,
            "target": self.target,
            "primary_key": list(self.primary_key),
            "key_source": self.key_source,
            "upstream": list(self.upstream),
            "function_url": base_url.rstrip("/") + "/make/" + quote(self.name, safe=""),
        }
        if self.secret_env:
            d["function_secret_env"] = self.secret_env
        if self.auto_schedule is not None:
            d["auto_schedule"] = self.auto_schedule
        return d

    def call(self, key: Key) -> list[Row]:
        """Runs the make for key and returns its rows as the worker expects them."""
        out = self.make(dict(key))
        if isinstance(out, dict):
            rows = [out]
        elif out is None or isinstance(out, (str, bytes)):
            raise TypeError(
                f"make of {self.name} returned {type(out).__name__}; "
                "return a row (a dict) or a list of rows"
            )
        else:
            rows = list(out)
        for row in rows:
            if not isinstance(row, dict):
                raise TypeError(f"make of {self.name} returned a row of type {type(row).__name__}, not a dict")
        if not rows:
            raise ValueError(f"make of {self.name} returned no rows; the key would stay to do")
        return rows


class Pipeline:
    """A set of computed tables whose makes are Python functions.

    Each make is a function of the key (a dict of the primary-key columns) returning the target
    row(s) for that key, decorated with :meth:`computed`. :meth:`serve` answers populate-worker's
    calls; :meth:`tables_file` writes the definitions the worker reads at start.
    """

    def __init__(self) -> None:
        self._tables: dict[str, ComputedTable] = {}

    def computed(
        self,
        *,
        target: str,
        primary_key: Iterable[str],
        key_source: str,
        upstream: Iterable[str] = (),
        name: str | None = None,
        secret_env: str | None = None,
        auto_schedule: bool | None = None,
    ) -> Callable[[MakeFunc], MakeFunc]:
        """Registers the decorated function as the make of a computed table.

        ``name`` defaults to ``target`` without its schema. ``secret_env`` names the worker's
        environment variable holding this table's own signing secret (its tables file entry's
        ``function_secret_env``); the worker's FUNCTION_SECRET signs its calls without one.
        ``auto_schedule=False`` leaves the scheduling of keys to schedule and populate calls. The
        function itself is returned unchanged, so it can still be called (and tested) directly.
        """
        pk = list(primary_key)
        if not pk:
            raise ValueError("primary_key names at least one column")

        def register(fn: MakeFunc) -> MakeFunc:
            table = ComputedTable(
                name=name or target.rsplit(".", 1)[-1],
                target=target,
                primary_key=pk,
                key_source=key_source,
                make=fn,
                upstream=list(upstream),
                secret_env=secret_env,
                auto_schedule=auto_schedule,
            )
            if table.name in self._tables:
                raise ValueError(f"computed table {table.name!r} registered twice")
            self._tables[table.name] = table
            return fn

        return register

    def table(self, name: str) -> ComputedTable:
        return self._tables[name]

    @property
    def tables(self) -> list[ComputedTable]:
        return [self._tables[n] for n in sorted(self._tables)]

    def definitions(self, base_url: str) -> list[dict[str, Any]]:
        """Every table's TABLES_FILE entry, with makes served under base_url."""
        return [t.definition(base_url) for t in self.tables]

    def tables_file(self, path: str, base_url: str) -> None:
        """Writes populate-worker's TABLES_FILE for these tables, served under base_url."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.definitions(base_url), f, indent=2)
            f.write("\n")

    def register(self, client: Client, base_url: str) -> list[tuple[str, bool]]:
        """Defines every table with the worker ``client`` calls (PUT /v1/tables/{name}, which
        takes the admin scope's token), makes served under base_url: what ``serve --register``
        does. Returns each table's name and whether it is new."""
        out = []
        for t in self.tables:
            _, created = client.define_table(t.definition(base_url))
            out.append((t.name, created))
        return out

    def handle(self, table_name: str, body: bytes) -> tuple[int, dict[str, Any]]:
        """Answers one call of the worker: the status and the JSON body to send."""
        try:
            req = json.loads(body)
            if not isinstance(req, dict) or not isinstance(req.get("key"), dict):
                raise ValueError('the request is not {"table": ..., "key": {...}}')
        except ValueError as e:
            return 400, _error("BadRequest", str(e), "")
        table = self._tables.get(table_name)
        if table is None:
            return 404, _error("LookupError", f"no computed table {table_name!r} is served here", "")
        if req.get("table", table_name) != table_name:
            return 400, _error("BadRequest", f"the request names table {req.get('table')!r}, the URL {table_name!r}", "")
        try:
            rows = table.call(req["key"])
            # NaN and infinities are not JSON: a make that returns them fails as ValueError.
            json.dumps(rows, allow_nan=False)
        except Exception as e:  # noqa: BLE001 - every make error is recorded, as DataJoint does
            return 500, _error(type(e).__name__, str(e), traceback.format_exc())
        return 200, {"rows": rows}

    def server(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        sock: socket.socket | None = None,
        *,
        secret: str | Sequence[str] | None = None,
        insecure: bool = False,
    ) -> FunctionServer:
        """An HTTP server for these makes, on host:port or on an already listening socket.

        It accepts only calls signed with secret (the worker's POPULATE_WORKER_FUNCTION_SECRET;
        several while rotating), by default DROVER_FUNCTION_SECRET's. Without a secret it
        refuses to start unless insecure, which accepts every call: only for a worker without
        FUNCTION_SECRET on loopback or a private network."""
        secrets = secrets_from_env() if secret is None else ([secret] if isinstance(secret, str) else list(secret))
        if not secrets and not insecure:
            raise ValueError(
                f"no secret to check the worker's signatures with: set {SECRET_ENV} to the worker's "
                "POPULATE_WORKER_FUNCTION_SECRET, or pass insecure=True (--insecure) to accept unsigned calls"
            )
        return FunctionServer(self, host, port, sock, secrets=secrets)

    def serve(
        self, host: str = "127.0.0.1", port: int = 8090, *, secret: str | Sequence[str] | None = None, insecure: bool = False
    ) -> None:
        """Serves the makes until interrupted (see :meth:`server` for secret and insecure)."""
        srv = self.server(host, port, secret=secret, insecure=insecure)
        try:
            srv.serve_forever()
        finally:
            srv.server_close()


def _error(cls: str, message: str, stack: str) -> dict[str, Any]:
    return {"error": {"class": cls, "message": message, "stack": stack}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # the worker keeps connections alive
    server: FunctionServer

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        path = self.path.split("?", 1)[0]
        if not path.startswith("/make/"):
            self._send(404, _error("LookupError", f"no make at {path}", ""))
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_REQUEST:
            self._send(413, _error("BadRequest", f"request exceeds {MAX_REQUEST} bytes", ""))
            self.close_connection = True
            return
        body = self.rfile.read(length)
        if self.server.secrets:
            try:
                verify(self.server.secrets, self.headers.get(HEADER), body)
            except SignatureError as e:
                self._send(401, {"type": "about:blank", "title": "Unauthorized", "status": 401, "detail": str(e)}, "application/problem+json")
                return
        status, out = self.server.pipeline.handle(unquote(path[len("/make/"):]), body)
        self._send(status, out)

    def do_GET(self) -> None:  # noqa: N802
        if self.path.split("?", 1)[0] == "/healthz":
            self._send(200, {"tables": [t.name for t in self.server.pipeline.tables]})
        else:
            self._send(404, _error("LookupError", "not found", ""))

    def _send(self, status: int, body: dict[str, Any], content_type: str = "application/json") -> None:
        raw = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            if status == 401:
                self.send_header("WWW-Authenticate", HEADER)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
        except (BrokenPipeError, ConnectionResetError):
            # The worker gave up on the call (a cancelled run, shutdown, its timeout) and has
            # recorded the key's outcome itself; the answer has nowhere to go.
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        if self.server.log_requests:
            super().log_message(format, *args)


class FunctionServer(ThreadingHTTPServer):
    """Serves a pipeline's makes: POST /make/{table} per computed table, GET /healthz. Built by
    :meth:`Pipeline.server`, which gives it the secrets a call must be signed with.

    Each call runs in its own thread, so the worker's concurrent makes (its River workers and a
    populate's processes) run at once.
    """

    daemon_threads = True

    def __init__(
        self, pipeline: Pipeline, host: str, port: int, sock: socket.socket | None = None, *, secrets: Sequence[str] = ()
    ) -> None:
        self.pipeline = pipeline
        # The secrets a call must be signed with; none: every call is accepted.
        self.secrets = list(secrets)
        self.log_requests = False
        self._thread: threading.Thread | None = None
        if sock is None:
            super().__init__((host, port), _Handler)
        else:
            super().__init__(sock.getsockname()[:2], _Handler, bind_and_activate=False)
            self.socket.close()
            self.socket = sock
            self.server_address = sock.getsockname()[:2]

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FunctionServer:
        """Serves in a background thread; :meth:`stop` ends it."""
        self._thread = threading.Thread(target=self.serve_forever, name="drover-functions", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join()
