"""python3 -m drover: serve a pipeline's makes, or write populate-worker's tables file for them.
Installed with pip, the command is also drover-py (drover is the Go operator CLI's name).

    python3 -m drover tables MODULE[:PIPELINE] --url http://HOST:PORT [-o tables.json]
    python3 -m drover serve MODULE[:PIPELINE] [--host 127.0.0.1] [--port 8090] [--insecure]

MODULE is imported (from the current directory or PYTHONPATH); PIPELINE names its
drover.Pipeline, `pipeline` by default. serve accepts only calls signed with the secret in
DROVER_FUNCTION_SECRET (the worker's POPULATE_WORKER_FUNCTION_SECRET); --insecure accepts
unsigned ones instead.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

from .functions import Pipeline


def load(spec: str) -> Pipeline:
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
    args = p.parse_args(argv)
    pipeline = load(args.pipeline)
    if args.cmd == "tables":
        if args.output:
            pipeline.tables_file(args.output, args.url)
        else:
            json.dump(pipeline.definitions(args.url), sys.stdout, indent=2)
            sys.stdout.write("\n")
        return 0
    try:
        srv = pipeline.server(args.host, args.port, insecure=args.insecure)
    except ValueError as e:
        raise SystemExit(f"{prog()} serve: {e}") from None
    checks = "signed calls only" if srv.secrets else "UNSIGNED calls accepted (--insecure)"
    print(f"serving {', '.join(t.name for t in pipeline.tables)} on {srv.url}: {checks}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
