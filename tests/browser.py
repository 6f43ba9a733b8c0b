"""Headless Chromium driven through the DevTools protocol over a pipe (``--remote-debugging-pipe``):
no websocket client, no Playwright, no port. Enough for the report tests: open a page at a given
viewport (``Emulation.setDeviceMetricsOverride``: headless windows cannot be narrower than 500
px, an emulated viewport can), evaluate JavaScript, take a screenshot.

    with Browser() as b:
        b.open("file:///tmp/report.html#kind=dropped", width=400, height=900)
        b.eval("document.documentElement.scrollWidth")
        b.screenshot(Path("phone.png"), full_page=True)

The browser runs in its own session (process group) and is killed by its PID when the pipe
or the ``with`` block ends.
"""
from __future__ import annotations

import base64
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--remote-debugging-pipe"]


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    def __init__(self, executable: str | None = None, timeout: float = 60) -> None:
        exe = executable or chromium_path()
        if exe is None:
            raise FileNotFoundError("no chromium on PATH")
        self.timeout = timeout
        self._profile = tempfile.TemporaryDirectory(prefix="dedup-chromium-")
        to_child, from_us = os.pipe()  # the browser reads commands on its fd 3
        to_us, from_child = os.pipe()  # and writes replies and events on its fd 4

        def fds() -> None:  # in the child, before exec
            os.dup2(to_child, 3)
            os.dup2(from_child, 4)

        self.proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={self._profile.name}", "about:blank"],
                                     preexec_fn=fds, pass_fds=(3, 4), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        os.close(to_child)
        os.close(from_child)
        self._w = os.fdopen(from_us, "wb", buffering=0)
        self._r = os.fdopen(to_us, "rb", buffering=0)
        self._buf = b""
        self._id = 0
        self.session: str | None = None

    # -- protocol ---------------------------------------------------------------------------------
    def _message(self) -> dict[str, Any]:
        while b"\0" not in self._buf:
            if not select.select([self._r], [], [], self.timeout)[0]:
                raise TimeoutError(f"chromium said nothing for {self.timeout} s")
            chunk = self._r.read(1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, *, browser: bool = False, **params: Any) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if self.session and not browser:
            msg["sessionId"] = self.session
        self._w.write(json.dumps(msg).encode("utf-8") + b"\0")
        while True:
            reply = self._message()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def _wait(self, event: str) -> dict[str, Any]:
        while True:
            msg = self._message()
            if msg.get("method") == event:
                return msg

    # -- what the tests use -----------------------------------------------------------------------
    def open(self, url: str, *, width: int, height: int, mobile: bool = False) -> None:
        if self.session is None:
            target = self.send("Target.createTarget", browser=True, url="about:blank")["targetId"]
            self.session = self.send("Target.attachToTarget", browser=True, targetId=target,
                                     flatten=True)["sessionId"]
            self.send("Page.enable")
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=mobile)
        # via about:blank, so a URL that differs from the open one only in its #fragment is still
        # a fresh load (a same-document navigation fires no load event and races the page's script)
        for target in ("about:blank", url):
            self.send("Page.navigate", url=target)
            self._wait("Page.loadEventFired")

    def eval(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails'].get('text')} "
                               f"{result['exceptionDetails'].get('exception', {}).get('description', '')}")
        return result["result"].get("value")

    def screenshot(self, path: Path, *, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
            w, h = self.eval("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": w, "height": min(h, 12000), "scale": 1}
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", **params)["data"]))
        return path

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self.send("Browser.close", browser=True)
                except (RuntimeError, OSError):
                    pass
                self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)  # the group we created (pid == pgid)
                self.proc.wait()
            for f in (self._w, self._r):
                f.close()
            self._profile.cleanup()

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
