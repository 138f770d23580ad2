"""The store published for its readers: ``docketeer serve`` (a read-only web page) and
``docketeer export`` (Parquet and CSV files per docket).

The web server and the exporter are imported inside the commands: they bring Starlette,
pyarrow and the stores, which ``docketeer --help`` and a bad argument do without."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.ops.commands.command_line import command, open_runtime


def register(commands) -> None:
    serve = commands.add_parser("serve", help="a read-only web page to search and read the comments (loopback by default)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=parse_port, default=8080, help="port (default 8080)")
    export = commands.add_parser("export", help="comments, attachments and campaigns per docket as Parquet and CSV")
    export.add_argument("dest", metavar="DEST", help="folder; one subfolder per docket")
    export.add_argument("--docket", help="comma-separated docket ids (default: every known docket)")
    export.add_argument("--format", choices=["parquet", "csv"], help="only this format (default: both)")


@command
def cmd_serve(args) -> int:
    from pipeline.web.server import serve

    serve(open_runtime(), host=args.host, port=args.port)
    return 0


def parse_port(text: str) -> int:
    """--port: 1 to 65535 (argparse type)."""
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"not a port number (1 to 65535): {text!r}")
    return int(text)


@command
def cmd_export(args) -> int:
    from pipeline.ops.export import FORMATS, export

    dockets = [d.strip() for d in (args.docket or "").split(",") if d.strip()] or None
    formats = (args.format,) if args.format else FORMATS
    report = export(open_runtime(), Path(args.dest), dockets, formats)
    print(f"exported {len(report.written)} docket(s) to {args.dest}"
          + (f": {', '.join(report.written)}" if report.written else "")
          + f"; {len(report.unchanged)} unchanged since their last export")
    return 0

