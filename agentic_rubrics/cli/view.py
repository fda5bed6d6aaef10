"""``agentic-rubrics view RUN``: the run's HTML view (:mod:`agentic_rubrics.report.view_index`), and
``--serve`` to look at it from another machine (through ``ssh -L``) on 127.0.0.1."""

from __future__ import annotations

import functools
import http.server
from pathlib import Path
from typing import Annotated, Any

import typer

from agentic_rubrics.cli.exit import failed


class ViewHandler(http.server.SimpleHTTPRequestHandler):
    """Files of the view folder only (the standard handler refuses paths outside it), each with the
    view's own policy in a header too, and no guessing of content types."""

    def end_headers(self) -> None:
        self.send_header("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a browser's every request on the terminal says nothing the user needs


def make_server(folder: Path, host: str = "127.0.0.1", port: int = 8765) -> http.server.HTTPServer:
    """A server of ``folder`` bound to ``host``:``port`` (0: any free port), not yet serving."""
    handler = functools.partial(ViewHandler, directory=str(folder))
    return http.server.ThreadingHTTPServer((host, port), handler)


def view(
    run: Annotated[Path, typer.Argument(help="A reported run folder.")],
    serve: Annotated[
        bool,
        typer.Option("--serve", help="Serve the view over HTTP after writing it (Ctrl-C stops)."),
    ] = False,
    port: Annotated[
        int,
        typer.Option("--port", help="The port to serve on (0: any free one).", min=0, max=65535),
    ] = 8765,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="The address to serve on; from another machine, forward it: ssh -L PORT:127.0.0.1:PORT.",
        ),
    ] = "127.0.0.1",
) -> None:
    """Write RUN/view/: an HTML view of the run (every task's rubric, verdicts and patches) that opens
    from the file system, with no network; --serve serves it on 127.0.0.1."""
    from agentic_rubrics.exceptions import AgenticRubricsError
    from agentic_rubrics.report.view_index import write_view

    try:
        written = write_view(run)
    except AgenticRubricsError as exc:
        raise failed(exc) from exc
    typer.echo(
        f"{written.folder / 'index.html'}: {written.tasks} task pages,"
        f" {written.bytes / 1e6:.1f} MB, {written.seconds:.1f} s"
    )
    if not serve:
        return
    try:
        server = make_server(written.folder, host, port)
    except OSError as exc:
        typer.echo(f"cannot serve on {host}:{port}: {exc.strerror or exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"serving on http://{host}:{server.server_port}/ (Ctrl-C stops)", err=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
