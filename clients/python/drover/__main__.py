"""python3 -m drover: serve a pipeline's makes, or write populate-worker's tables file for them.
Installed with pip, the command is also drover-py (drover is the Go operator CLI's name).

    python3 -m drover tables MODULE[:PIPELINE] --url http://HOST:PORT [-o tables.json]
    python3 -m drover serve MODULE[:PIPELINE] [--host 127.0.0.1] [--port 8090] [--insecure]
        [--register http://WORKER:8085 [--admin-token TOKEN] [--url http://HOST:PORT]]

MODULE is imported (from the current directory or PYTHONPATH); PIPELINE names its
drover.Pipeline, `pipeline` by default. serve accepts only calls signed with the secret in
DROVER_FUNCTION_SECRET (the worker's POPULATE_WORKER_FUNCTION_SECRET); --insecure accepts
unsigned ones instead. With --register it first defines the pipeline's tables with that
populate-worker (PUT /v1/tables/{name}, with a token of its admin scope: --admin-token or
DROVER_ADMIN_TOKEN), its makes at --url (where the worker reaches this server; http://HOST:PORT
by default), so that serving alone takes a new make from code to running.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

from .client import Client
from .errors import DroverError
from .functions import FunctionServer, Pipeline


def load(spec: str) -> Pipeline:
    # The current directory, as `python3 -m` has it: the drover-py script's own folder is the
    # venv's bin, where no pipeline lives.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    module, _, attr = spec.partition(":")
    obj = getattr(importlib.import_module(module), attr or "pipeline")
    if not isinstance(obj, Pipeline):
        raise SystemExit(f"{spec} is a {type(obj).__name__}, not a drover.Pipeline")
    return obj


def prog() -> str:
    """The command's name as the user typed it: drover-py when installed, python3 -m drover."""
    return "drover-py" if os.path.basename(sys.argv[0]) == "drover-py" else "python3 -m drover"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=prog(), description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tables", help="print populate-worker's TABLES_FILE for the pipeline's tables")
    t.add_argument("pipeline", help="MODULE[:PIPELINE]")
    t.add_argument("--url", required=True, help="where the makes are served, as the worker reaches them")
    t.add_argument("-o", "--output", help="write to this file instead of stdout")
    s = sub.add_parser("serve", help="serve the pipeline's makes until Ctrl-C")
    s.add_argument("pipeline", help="MODULE[:PIPELINE]")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8090)
    s.add_argument(
        "--insecure",
        action="store_true",
        help="accept unsigned calls when DROVER_FUNCTION_SECRET is unset (a worker without FUNCTION_SECRET)",
    )
    s.add_argument(
        "--register",
        metavar="WORKER_URL",
        help="first define the pipeline's tables with the populate-worker at WORKER_URL (PUT /v1/tables/{name})",
    )
    s.add_argument(
        "--admin-token",
        default=os.environ.get("DROVER_ADMIN_TOKEN"),
        help="with --register: a token of the worker's admin scope, POPULATE_WORKER_ADMIN_TOKENS (default $DROVER_ADMIN_TOKEN)",
    )
    s.add_argument("--url", help="with --register: where the worker reaches these makes (default http://HOST:PORT)")
    args = p.parse_args(argv)
    pipeline = load(args.pipeline)
    if args.cmd == "tables":
        if args.output:
            pipeline.tables_file(args.output, args.url)
        else:
            json.dump(pipeline.definitions(args.url), sys.stdout, indent=2)
            sys.stdout.write("\n")
        return 0
    if args.register and not args.admin_token:
        raise SystemExit(f"{prog()} serve --register: a token of the worker's admin scope is required (--admin-token or DROVER_ADMIN_TOKEN)")
    try:
        srv = pipeline.server(args.host, args.port, insecure=args.insecure)
    except ValueError as e:
        raise SystemExit(f"{prog()} serve: {e}") from None
    checks = "signed calls only" if srv.secrets else "UNSIGNED calls accepted (--insecure)"
    print(f"serving {', '.join(t.name for t in pipeline.tables)} on {srv.url}: {checks}", flush=True)
    if args.register:
        register(pipeline, srv, args.register, args.admin_token, args.url)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()
    return 0


def register(pipeline: Pipeline, srv: FunctionServer, worker: str, token: str, url: str | None) -> None:
    """Defines the pipeline's tables with the worker, makes at url (the server's own address by
    default), or stops serve saying why. The server is listening already: a call the worker
    makes at once waits in its backlog until serve_forever takes it."""
    base = url or srv.url
    if not url and srv.server_address[0] in ("0.0.0.0", "::"):
        srv.server_close()
        raise SystemExit(f"{prog()} serve --register: --url is required with --host {srv.server_address[0]}: where does the worker reach this server?")
    try:
        for name, created in pipeline.register(Client(worker, token), base):
            print(f"registered {name} with {worker} ({'new' if created else 'replaced'}), its make at {base}", flush=True)
    except DroverError as e:
        srv.server_close()
        raise SystemExit(f"{prog()} serve --register: {e}") from None


if __name__ == "__main__":
    sys.exit(main())
