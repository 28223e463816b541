"""Headless Chromium driven through the DevTools protocol over a pipe, with the standard
library only: open a page, wait until it says it is ready, evaluate JavaScript, collect console
errors, exceptions and every network request, take a screenshot.

``--remote-debugging-pipe`` makes Chromium read protocol messages from file descriptor 3 and
write them to descriptor 4, each a JSON text ended by a NUL byte
(https://chromedevtools.github.io/devtools-protocol/). No port, no websocket, no Playwright.
Used by the browser tests, bench/html_report.py and scripts/docs-screenshots."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
    # Nothing but the file itself may load: any host name fails to resolve.
    "--host-resolver-rules=MAP * ~NOTFOUND",
)


def chromium_path() -> str | None:
    """The Chromium binary (Debian's ``chromium``), None if it is not installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class ChromiumError(RuntimeError):
    pass


@dataclass
class Page:
    """What one page did: console errors, uncaught exceptions, every URL it requested."""

    session_id: str
    target_id: str = ""
    console_errors: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)  # alert(), confirm(), prompt()


class Chromium:
    """One headless Chromium with a fresh, empty profile, ended on close."""

    def __init__(self, *, width: int = 1200, height: int = 900) -> None:
        binary = chromium_path()
        if binary is None:
            raise ChromiumError("chromium is not installed (apt-get install chromium)")
        self.profile = tempfile.mkdtemp(prefix="cutaway-chromium-")
        to_browser_read, self._write = os.pipe()
        self._read, from_browser_write = os.pipe()

        def plumb() -> None:  # in the child: the pipes at fds 3 and 4
            os.dup2(to_browser_read, 3)
            os.dup2(from_browser_write, 4)

        self.process = subprocess.Popen(
            [
                binary,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=plumb,
            # Kept open through the close of every other descriptor, which follows plumb().
            pass_fds=(3, 4),
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self._pages: dict[str, Page] = {}
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> Chromium:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(ChromiumError, OSError):
            self.send("Browser.close", timeout=5)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    # -- the protocol --------------------------------------------------------------------

    def _message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise ChromiumError("chromium did not answer in time")
            ready, _, _ = select.select([self._read], [], [], 0.1)
            if ready:
                chunk = os.read(self._read, 1 << 20)
                if not chunk:
                    raise ChromiumError("chromium closed the pipe")
                self._buffer += chunk
        text, _, self._buffer = self._buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(text)
        return message

    def _dispatch(self, message: Mapping[str, Any]) -> None:
        page = self._pages.get(message.get("sessionId", ""))
        method, params = message.get("method", ""), message.get("params", {})
        if page is not None:
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                args = params.get("args", [])
                page.console_errors.append(
                    " ".join(str(a.get("value", a.get("description", ""))) for a in args)
                )
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                exception = details.get("exception", {})
                page.exceptions.append(str(exception.get("description", details.get("text"))))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                page.console_errors.append(str(params["entry"].get("text")))
            elif method == "Network.requestWillBeSent":
                page.requests.append(str(params.get("request", {}).get("url")))
            elif method == "Page.javascriptDialogOpening":
                page.dialogs.append(str(params.get("message")))
                self.send("Page.handleJavaScriptDialog", {"accept": True}, session=page.session_id)
        self._events.append(dict(message))

    def send(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        session: str | None = None,
        timeout: float = 60,
    ) -> dict[str, Any]:
        self._next_id += 1
        request: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            request["sessionId"] = session
        os.write(self._write, json.dumps(request).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            message = self._message(deadline)
            if message.get("id") == request["id"]:
                if "error" in message:
                    raise ChromiumError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self._dispatch(message)

    def wait_event(self, method: str, session: str, timeout: float = 60) -> dict[str, Any]:
        for index, event in enumerate(self._events):
            if event.get("method") == method and event.get("sessionId") == session:
                del self._events[index]
                return event
        deadline = time.monotonic() + timeout
        while True:
            message = self._message(deadline)
            self._dispatch(message)
            if message.get("method") == method and message.get("sessionId") == session:
                self._events.remove(message)
                return message

    # -- pages ---------------------------------------------------------------------------

    def open(self, path: Path | str, *, width: int = 1200, height: int = 900) -> Page:
        """Load a file (or URL) in a new tab and wait for its load event."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        page = Page(session, target)
        self._pages[session] = page
        for domain in ("Runtime", "Page", "Log", "Network"):
            self.send(f"{domain}.enable", session=session)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        url = path if isinstance(path, str) else Path(path).resolve().as_uri()
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_event("Page.loadEventFired", session)
        return page

    def frames(self, page: Page) -> list[Page]:
        """The page's out-of-process frames (a sandboxed iframe is one), each attached as a
        Page of its own to evaluate in. Errors they logged before this call are not seen."""
        targets = self.send("Target.getTargets")["targetInfos"]
        frames = []
        for target in targets:
            if target.get("type") == "iframe" and target.get("parentId") == page.target_id:
                session = self.send(
                    "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
                )["sessionId"]
                frame = Page(session, target["targetId"])
                self._pages[session] = frame
                for domain in ("Runtime", "Log"):
                    self.send(f"{domain}.enable", session=session)
                frames.append(frame)
        return frames

    def evaluate(self, page: Page, expression: str, *, timeout: float = 60) -> Any:
        """The value of a JavaScript expression (a promise is awaited)."""
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
            session=page.session_id,
            timeout=timeout,
        )
        if "exceptionDetails" in result:
            raise ChromiumError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def screenshot(
        self, page: Page, path: Path, *, full_page: bool = True, max_height: int = 8000
    ) -> None:
        """A PNG of the viewport, or of the whole page down to ``max_height`` pixels (a page
        of a hundred thousand pixels takes a minute to encode and nobody looks that far)."""
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": full_page}
        if full_page:
            width, height = self.evaluate(
                page,
                "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]",
            )
            height = min(height, max_height)
            params["clip"] = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
        data = self.send("Page.captureScreenshot", params, session=page.session_id)["data"]
        path.write_bytes(base64.b64decode(data))
