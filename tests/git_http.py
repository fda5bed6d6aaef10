"""A loopback smart-HTTP git server for tests: ``git http-backend`` behind ``http.server``.

It serves the repositories under ``root`` at ``http://127.0.0.1:<port>/<folder>``, counts requests
(one ``GET …/info/refs`` per fetch a client makes), can hold upload-pack requests until released
(to kill a client in the middle of a fetch), and can answer in protocol v0 only, as older servers do
(it then ignores the client's ``Git-Protocol`` header): with v0, ``uploadpack.allow*SHA1InWant`` off
makes the server refuse a commit that is not a branch or tag tip.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

BACKEND = (
    Path(
        subprocess.run(
            ["git", "--exec-path"], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    / "git-http-backend"
)


class GitHttpServer:
    def __init__(self, root: Path, *, protocol_v2: bool = True) -> None:
        self.root = root
        self.protocol_v2 = protocol_v2
        self.requests: list[str] = []
        self.release = threading.Event()
        self.release.set()  # clear() to hold upload-pack requests until set() again
        self.held = threading.Event()  # set when an upload-pack request is being held
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )  # a stop waits for the next poll: the default 0.5 s per server adds up in a suite

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def url(self, userinfo: str = "") -> str:
        return f"http://{userinfo}127.0.0.1:{self.port}"

    def fetches(self) -> int:
        """How many fetch sessions reached the server (each starts with a GET of info/refs)."""
        return sum(1 for r in self.requests if r.startswith("GET ") and r.endswith("/info/refs"))

    def __enter__(self) -> GitHttpServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._cgi()

    def do_POST(self) -> None:
        self._cgi()

    def _cgi(self) -> None:
        owner: GitHttpServer = self.server.owner  # type: ignore[attr-defined]
        path, _, query = self.path.partition("?")
        assert "chunked" not in self.headers.get("Transfer-Encoding", "")
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        owner.requests.append(f"{self.command} {path}")
        if self.command == "POST" and path.endswith("/git-upload-pack"):
            owner.held.set()
            owner.release.wait(timeout=120)
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(owner.root),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_PROJECT_ROOT": str(owner.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": "127.0.0.1",
        }
        if encoding := self.headers.get("Content-Encoding"):
            env["HTTP_CONTENT_ENCODING"] = encoding
        if owner.protocol_v2 and (protocol := self.headers.get("Git-Protocol")):
            env["HTTP_GIT_PROTOCOL"] = protocol
        out = subprocess.run(
            [shutil.which(str(BACKEND)) or str(BACKEND)],
            input=body,
            env=env,
            capture_output=True,
            timeout=120,
        ).stdout
        sep = b"\r\n\r\n" if b"\r\n\r\n" in out else b"\n\n"
        head, _, payload = out.partition(sep)
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
