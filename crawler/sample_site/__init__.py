"""A small static sample website served on loopback for demos and crawl tests.

``pages/`` holds a fictional town newspaper (see README.md) with the copies a
crawler really meets: tracking parameters, session ids, print versions, a
mirror, corrected and syndicated copies. ``expected.json`` is the ground truth.

    server, url = serve()          # background thread, free port on 127.0.0.1
    ...                            # crawl url
    stop(server)

or ``with running() as url: ...``; from a shell: ``python -m crawler.sample_site``.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import functools
import json
import os
import re
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

__all__ = [
    "spawn",
    "terminate",
    "PAGES_DIR", "EXPECTED_PATH", "SampleSiteHandler", "SampleSiteServer",
    "make_server", "serve", "stop", "running", "load_expected", "manifest_key",
]

HERE = Path(__file__).resolve().parent
PAGES_DIR = HERE / "pages"
EXPECTED_PATH = HERE / "expected.json"

_JSESSIONID = re.compile(r";jsessionid=[^/?#]*", re.IGNORECASE)


class SampleSiteHandler(SimpleHTTPRequestHandler):
    """Serves files under ``directory``; query strings and ``;jsessionid=`` are ignored.

    Only existing files (and ``/`` -> ``index.html``) are served; everything
    else, including directory listings and redirects, is a 404.
    """

    server_version = "SampleSite/1.0"
    extensions_map = {
        **SimpleHTTPRequestHandler.extensions_map,
        ".html": "text/html; charset=utf-8",
        ".htm": "text/html; charset=utf-8",
        ".txt": "text/plain; charset=utf-8",
        ".json": "application/json",
    }

    def translate_path(self, path: str) -> str:
        path = path.split("#", 1)[0].split("?", 1)[0]
        return super().translate_path(_JSESSIONID.sub("", path))

    def send_head(self):
        fs_path = self.translate_path(self.path)
        url_path = _JSESSIONID.sub("", self.path.split("#", 1)[0].split("?", 1)[0])
        if os.path.isdir(fs_path):
            ok = url_path.endswith("/") and os.path.isfile(os.path.join(fs_path, "index.html"))
        else:
            ok = os.path.isfile(fs_path) and not url_path.endswith("/")
        if not ok:
            self.send_error(404, "File not found")
            return None
        return super().send_head()

    def list_directory(self, path):  # never reached; belt and braces
        self.send_error(404, "File not found")
        return None

    def log_message(self, format, *args):  # noqa: A002 - signature of the base class
        if getattr(self.server, "verbose", False):
            super().log_message(format, *args)


class SampleSiteServer(ThreadingHTTPServer):
    daemon_threads = True
    verbose = False
    thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/"

    def handle_error(self, request, client_address):
        if self.verbose:
            super().handle_error(request, client_address)


def make_server(host: str = "127.0.0.1", port: int = 0, *, verbose: bool = False,
                directory: str | os.PathLike | None = None) -> SampleSiteServer:
    """Bind (but do not start) a server for the sample site."""
    handler = functools.partial(SampleSiteHandler, directory=str(directory or PAGES_DIR))
    server = SampleSiteServer((host, port), handler)
    server.verbose = verbose
    return server


def serve(host: str = "127.0.0.1", port: int = 0, *, verbose: bool = False,
          directory: str | os.PathLike | None = None) -> tuple[SampleSiteServer, str]:
    """Start serving in a daemon thread; return ``(server, "http://host:port/")``.

    ``port=0`` picks a free port. Call ``stop(server)`` when done.
    """
    server = make_server(host, port, verbose=verbose, directory=directory)
    server.thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1},
        name=f"sample-site-{server.server_address[1]}", daemon=True,
    )
    server.thread.start()
    return server, server.url


def stop(server: SampleSiteServer) -> None:
    """Stop a server started by ``serve()`` and close its socket."""
    if server.thread is not None:
        server.shutdown()
        server.thread.join()
        server.thread = None
    server.server_close()


@contextlib.contextmanager
def running(host: str = "127.0.0.1", port: int = 0, *, verbose: bool = False):
    """``with running() as url:`` serve the sample site for the block."""
    server, url = serve(host, port, verbose=verbose)
    try:
        yield url
    finally:
        stop(server)


def load_expected() -> dict:
    """The ground-truth manifest (see README.md)."""
    return json.loads(EXPECTED_PATH.read_text(encoding="utf-8"))


def manifest_key(url: str) -> str:
    """``http://127.0.0.1:PORT/a.html;jsessionid=X?q=1#f`` -> ``/a.html;jsessionid=X?q=1``.

    The form in which paths appear in ``expected.json``. Parameter order is
    kept as is (w3lib's ``canonicalize_url`` would sort it).
    """
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def spawn(env: dict[str, str] | None = None, root: str | os.PathLike | None = None) -> tuple["subprocess.Popen[str]", str]:
    """Run ``python -m crawler.sample_site`` on a free loopback port (serving ``root``, by default the
    shipped pages); return the process and its URL.

    Stop it with :func:`terminate` (by PID), as the demo and the crawl tests do.
    """
    cmd = [sys.executable, "-m", "crawler.sample_site", "--port", "0"] + (["--root", str(root)] if root else [])
    proc = subprocess.Popen(cmd, cwd=Path(__file__).resolve().parents[2], env=env, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip() if proc.stdout else ""
    if not line.startswith("serving http://127.0.0.1:"):
        terminate(proc)
        raise RuntimeError(f"the sample site did not start (it printed {line!r})")
    return proc, line.split(" ", 1)[1]


def terminate(proc: "subprocess.Popen[str]") -> None:
    """SIGTERM the process by PID, SIGKILL after 10 s, and close its pipe."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    if proc.stdout:
        proc.stdout.close()
