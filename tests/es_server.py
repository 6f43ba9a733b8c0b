"""An Elasticsearch API server for tests and benchmarks.

With ``DEDUP_TEST_ES_URL`` set (e.g. ``http://localhost:9200``) the tests use that real
cluster.  Otherwise they start **noida-db**, an emulator of the Elasticsearch 8.15 REST API
(PyPI ``noida-db``, installed by the ``test`` extra): not Elasticsearch, so tests never assert
exact scores.  Its bundled binary is started directly (the console-script wrapper would leave
it orphaned when killed), bound to 127.0.0.1, and stopped by PID.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

__all__ = ["Emulator", "binary", "ENV_URL"]

ENV_URL = "DEDUP_TEST_ES_URL"


def binary() -> Path:
    """The noida-db executable bundled in the installed package."""
    import noida_db

    path = Path(noida_db.__file__).with_name("noida-db")
    if not path.exists():
        raise FileNotFoundError(f"noida-db binary missing at {path}: pip install -e '.[test]'")
    return path


class Emulator:
    """One noida-db process serving the Elasticsearch API on 127.0.0.1.

    ``start()`` picks a free port the first time and reuses it on later starts, with the same
    data directory, so a test can stop the server and bring the same cluster back.
    """

    def __init__(self, data_dir: str | os.PathLike | None = None) -> None:
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix="noida-"))
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.log = self.data_dir.parent / f"{self.data_dir.name}.log"

    def start(self, timeout: float = 30.0) -> str:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        out = open(self.log, "ab")
        self.proc = subprocess.Popen(
            [str(binary()), "start", "--only", "elasticsearch", "--host", "127.0.0.1",
             "--elasticsearch-port", str(self.port), "--data-dir", str(self.data_dir)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        out.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"noida-db exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            if not self.url:
                found = re.findall(r"elasticsearch\s+(http://127\.0\.0\.1:(\d+))", self.log.read_text(errors="replace"))
                if found:
                    self.url, port = found[-1]
                    self.port = int(port)
            if self.url and self._ready():
                return self.url
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"noida-db did not answer within {timeout} s: {self.log.read_text()[-2000:]}")

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.url, timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    def stop(self, *, kill: bool = False) -> None:
        """Stop the server process by PID and reap it: SIGTERM (SIGKILL after 10 s), or SIGKILL
        with ``kill``.  Unlike Elasticsearch, which fsyncs its translog before it acknowledges a
        write, the emulator loses acknowledged writes when SIGKILLed, so outage tests use SIGTERM."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None
        if self.port:  # the next start() parses the same URL again
            self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "Emulator":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """``python tests/es_server.py``: the emulator in the foreground, for trying the README's Elasticsearch
    commands by hand; Ctrl-C (or SIGTERM to this process) stops it."""
    import argparse

    p = argparse.ArgumentParser(description=main.__doc__)
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--data-dir", default=None, help="the emulator's data folder (default: a new temporary one)")
    args = p.parse_args(argv)
    server = Emulator(args.data_dir)
    server.port = args.port
    url = server.start()
    # SIGTERM too (a run in the background, which ignores SIGINT): the emulator is stopped with the wrapper
    signal.signal(signal.SIGTERM, _interrupt)
    print(f"noida-db (an Elasticsearch 8.15 API emulator) at {url}, PID {server.proc.pid if server.proc else '?'}; "
          f"data in {server.data_dir}; Ctrl-C (or kill {os.getpid()}) stops it", flush=True)
    try:
        while server.proc is not None and server.proc.poll() is None:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
