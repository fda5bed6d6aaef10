"""A made-up Django release served as an sdist from a loopback index (PEP 691 JSON), as PyPI serves
Django's: ``Django-1.0.tar.gz`` holding a fixed ``calc`` package and ``tests/runtests.py`` — a real
unittest runner at ``--verbosity 2``, which prints as Django's runner does (Django's runner is
unittest's; a label that is a package is discovered, as Django's ``DiscoverRunner`` does) — with the fix and its test already released; ``GOLD`` and ``TEST_PATCH`` take them out
and put them back. Used by test_sdist_trees.py and test_envcheck.py."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RUNTESTS = """\
import argparse, os, sys, unittest
ap = argparse.ArgumentParser()
ap.add_argument("--verbosity", type=int, default=1)
ap.add_argument("--settings")
ap.add_argument("--parallel")
ap.add_argument("labels", nargs="*")
args = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
loader = unittest.defaultTestLoader
suite = unittest.TestSuite()
for label in args.labels:  # as Django's DiscoverRunner: a package's test*.py modules discovered
    folder = os.path.join(here, *label.split("."))
    if os.path.isdir(folder):
        suite.addTests(loader.discover(folder, pattern="test*.py", top_level_dir=here))
    else:
        suite.addTests(loader.loadTestsFromName(label))
result = unittest.TextTestRunner(verbosity=args.verbosity).run(suite)
sys.exit(0 if result.wasSuccessful() else 1)
"""
TESTS_BEFORE = """\
import unittest
from calc import add


class AddTests(unittest.TestCase):
    def test_zero(self):
        self.assertEqual(add(0, 0), 0)
"""
TESTS_AFTER = (
    TESTS_BEFORE
    + """
    def test_add(self):
        self.assertEqual(add(2, 2), 4)

    def test_documented(self):
        \"\"\"add() adds, as its name says.\"\"\"
        self.assertEqual(add(1, 2), 3)
"""
)
RELEASED = {
    "calc/__init__.py": "def add(a, b):\n    return a + b\n",
    "tests/runtests.py": RUNTESTS,
    "tests/test_sqlite.py": "DATABASES = {}\n",
    "tests/calc_tests/__init__.py": "",
    "tests/calc_tests/tests.py": TESTS_AFTER,
    "setup.py": "raise SystemExit('an sdist is never built here')\n",
}
GOLD = """diff --git a/calc/__init__.py b/calc/__init__.py
--- a/calc/__init__.py
+++ b/calc/__init__.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""


def _test_patch() -> str:
    import difflib

    path = "tests/calc_tests/tests.py"
    diff = difflib.unified_diff(
        TESTS_BEFORE.splitlines(keepends=True),
        TESTS_AFTER.splitlines(keepends=True),
        f"a/{path}",
        f"b/{path}",
    )
    return f"diff --git a/{path} b/{path}\n" + "".join(diff)


TEST_PATCH = _test_patch()
FAIL_TO_PASS = ["test_add (calc_tests.tests.AddTests)", "add() adds, as its name says."]


def sdist_bytes(files: dict[str, str] = RELEASED, top: str = "Django-1.0") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size, info.mode = len(data), 0o755 if rel.endswith("runtests.py") else 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@contextmanager
def index(
    versions: tuple[str, ...] = ("0.9", "1.0", "1.0.1"),
    corrupt: bool = False,
    files: dict[str, str] = RELEASED,
) -> Iterator[tuple[str, list[str]]]:
    """A loopback index serving Django at ``versions`` (each the same tree: ``files``); its URL
    and the paths asked for. ``corrupt``: the archives differ from the index's sha256."""
    archives = {f"Django-{v}.tar.gz": sdist_bytes(files, top=f"Django-{v}") for v in versions}
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            host = f"http://127.0.0.1:{self.server.server_address[1]}"
            if self.path == "/simple/django/":
                files = [
                    {
                        "filename": name,
                        "url": f"{host}/files/{name}",
                        "hashes": {"sha256": hashlib.sha256(data).hexdigest()},
                    }
                    for name, data in archives.items()
                ] + [
                    {
                        "filename": "Django-1.0-py3-none-any.whl",
                        "url": "x",
                        "hashes": {"sha256": "0"},
                    }
                ]
                body = json.dumps({"files": files}).encode()
            elif self.path.startswith("/files/") and self.path[7:] in archives:
                body = archives[self.path[7:]] + (b"x" if corrupt else b"")
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
