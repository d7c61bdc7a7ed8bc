"""A minimal headless-Chromium driver over the DevTools protocol, standard library only.

Chromium started with ``--remote-debugging-pipe`` reads protocol messages from fd 3 and writes
them to fd 4, each one JSON text ended by a NUL byte. That is all this needs: no websocket, no
port, no extra package. :class:`Browser` opens one page, collects every console error and
uncaught exception, evaluates expressions and takes screenshots.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["Browser", "BrowserError", "find_chromium"]

_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """The path of a Chromium-family browser on PATH, or ``None``."""
    for name in _CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _above_four(fd: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return moved


class BrowserError(RuntimeError):
    """The browser did not start, answered with an error, or took too long."""


class Browser:
    """One headless Chromium with one page, driven through the DevTools pipe.

    :ivar errors: console errors, uncaught exceptions and error log entries seen so far.
    """

    def __init__(
        self, executable: str, *, width: int = 1400, height: int = 1000, timeout_s: float = 20.0
    ) -> None:
        self.timeout_s = timeout_s
        self.errors: list[str] = []
        self._events: list[dict[str, Any]] = []
        self._next_id = 0
        self._buffer = b""
        self._profile = tempfile.mkdtemp(prefix="roofline-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # Move the child's ends above 4 first: "3<&3 3<&-" would close the very fd it needs.
        to_child_r, from_child_w = (_above_four(fd) for fd in (to_child_r, from_child_w))
        args = [
            executable,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--mute-audio",
            "--hide-scrollbars",
            f"--window-size={width},{height}",
            f"--user-data-dir={self._profile}",
            "--remote-debugging-pipe",
            "about:blank",
        ]
        # bash puts our pipe ends on the fds the protocol expects (3: commands, 4: replies); dash
        # (Debian's sh) cannot name fds above 9.
        script = (
            f'exec "$0" "$@" 3<&{to_child_r} 4>&{from_child_w} {to_child_r}<&- {from_child_w}>&-'
        )
        # stderr goes to a file: a pipe nobody reads could fill up and stall the browser.
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self._process = subprocess.Popen(
            [shutil.which("bash") or "bash", "-c", script, *args],
            pass_fds=(to_child_r, from_child_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        try:
            target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
            self._session = self._call(
                "Target.attachToTarget", {"targetId": target, "flatten": True}
            )["sessionId"]
            for domain in ("Runtime.enable", "Log.enable", "Page.enable"):
                self.call(domain)
            self.call(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            )
        except BaseException:
            self.close()
            raise

    # -- protocol ---------------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode() + b"\0"
        while data:
            written = os.write(self._to_child, data)
            data = data[written:]

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("timed out waiting for Chromium")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                self._stderr.seek(0)
                stderr = self._stderr.read().decode(errors="replace")
                raise BrowserError(f"Chromium closed the DevTools pipe; stderr:\n{stderr[-2000:]}")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(raw)
        return message

    def _record(self, event: dict[str, Any]) -> None:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            text = details.get("exception", {}).get("description") or details.get("text", "")
            self.errors.append(f"uncaught: {text}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            args = " ".join(
                str(a.get("value", a.get("description", ""))) for a in params.get("args", [])
            )
            self.errors.append(f"console.{params['type']}: {args}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            self.errors.append(
                f"log ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}".strip()
            )
        self._events.append(event)

    def _call(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self._send(message)
        deadline = time.monotonic() + self.timeout_s
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            if "method" in reply:
                self._record(reply)

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send ``method`` to the page and return its result."""
        return self._call(method, params, self._session)

    def wait_for(self, event: str) -> dict[str, Any]:
        """Wait for the page event ``event`` (e.g. ``Page.loadEventFired``) and return it."""
        for seen in self._events:
            if seen.get("method") == event:
                self._events.remove(seen)
                return seen
        deadline = time.monotonic() + self.timeout_s
        while True:
            message = self._receive(deadline)
            if "method" in message:
                self._record(message)
                if message["method"] == event:
                    self._events.remove(message)
                    return message

    # -- page ---------------------------------------------------------------------------------
    def open(self, url: str) -> None:
        """Navigate to ``url`` and wait until its load event."""
        self.call("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-serialisable results only)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path, *, max_height: int = 6000, top: int = 0) -> Path:
        """Write a PNG of the page from ``top``, at most ``max_height`` pixels tall.

        The viewport is stretched to the captured height first, so sticky headers sit where a
        reader scrolling the page would see them rather than floating mid-picture.
        """
        metrics = self.call("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        width = int(size["width"])
        height = int(min(size["height"] - top, max_height))
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        self.evaluate(f"window.scrollTo(0, {top})")
        clip = {"x": 0, "y": top, "width": width, "height": height, "scale": 1}
        data = self.call("Page.captureScreenshot", {"format": "png", "clip": clip})
        path.write_bytes(base64.b64decode(data["data"]))
        return path

    def close(self) -> None:
        try:
            if self._process.poll() is None:
                with contextlib.suppress(BrowserError, OSError):
                    self._call("Browser.close")
                try:
                    self._process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait()
        finally:
            for fd in (self._to_child, self._from_child):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._stderr.close()
            shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
