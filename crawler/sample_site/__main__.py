"""``python -m crawler.sample_site [--host 127.0.0.1] [--port 0] [--root DIR] [--verbose]``

Prints exactly one line, ``serving http://HOST:PORT/``, then serves the sample
site until SIGTERM or SIGINT (exit status 0). Loopback addresses only.
"""

from __future__ import annotations

import argparse
import ipaddress
import signal
import socket
import sys
import threading

from . import serve, stop


def _loopback(host: str) -> str:
    try:
        addr = socket.gethostbyname(host)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot resolve {host!r}: {exc}") from None
    if not ipaddress.ip_address(addr).is_loopback:
        raise argparse.ArgumentTypeError(f"{host!r} is not a loopback address; the sample site binds loopback only")
    return addr


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m crawler.sample_site",
                                 description="Serve the sample site on loopback.")
    ap.add_argument("--host", type=_loopback, default="127.0.0.1", help="loopback address (default 127.0.0.1)")
    ap.add_argument("--port", type=int, default=0, help="port, 0 = any free port (default)")
    ap.add_argument("--root", default=None, help="serve this folder instead of the shipped pages (a copy to edit)")
    ap.add_argument("--verbose", action="store_true", help="log requests to stderr")
    args = ap.parse_args(argv)

    # The signal handler only sets a flag; the server runs in its own thread and
    # is shut down from here, so no exception is raised inside serve_forever().
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    server, url = serve(args.host, args.port, verbose=args.verbose, directory=args.root)
    try:
        print(f"serving {url}", flush=True)
        while not stopping.wait(0.2):
            pass
    finally:
        stop(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
