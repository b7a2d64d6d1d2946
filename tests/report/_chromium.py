"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``).

No port and no websocket: Chromium reads commands from fd 3 and writes replies and events to
fd 4, one JSON message per NUL-terminated chunk. The page is loaded with the Network domain
enabled, so every request the page makes is seen (``Network.requestWillBeSent``) together with
every failure (``Network.loadingFailed``), console error and uncaught exception.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--mute-audio",
    "--hide-scrollbars",
    # belt and braces: a request to any host fails instead of leaving the machine
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--remote-debugging-pipe",
)


def find_chromium() -> str | None:
    for candidate in (CHROMIUM, shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def install_chromium(timeout: float = 900.0) -> tuple[bool, str]:
    """``apt-get update && apt-get install -y chromium`` (as root). Returns (ok, log tail)."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    log = []
    for cmd in (
        ["apt-get", "update"],
        ["apt-get", "install", "-y", "chromium"],
    ):
        try:
            done = subprocess.run(
                cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, f"{' '.join(cmd)}: {exc}"
        log.append(done.stdout[-1500:] + done.stderr[-1500:])
        if done.returncode != 0:
            return False, f"{' '.join(cmd)} exited {done.returncode}:\n" + log[-1]
    return find_chromium() is not None, "\n".join(log)[-3000:]


@dataclass
class PageRun:
    """What loading one page showed."""

    requests: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (url, error text)
    console_errors: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    loaded: bool = False
    evaluated: dict[str, Any] = field(default_factory=dict)
    screenshot: bytes = b""


class _Pipe:
    def __init__(self, proc: subprocess.Popen[bytes], to_browser: int, from_browser: int):
        self.proc = proc
        self.to_browser = to_browser
        self.from_browser = from_browser
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> int:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            written = os.write(self.to_browser, data)
            data = data[written:]
        return self.next_id

    def _read_one(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer in time")
            ready, _, _ = select.select([self.from_browser], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError(f"Chromium closed the pipe (exit code {self.proc.poll()})")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = 60.0,
    ) -> dict[str, Any]:
        wanted = self.send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            message = self._read_one(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self.events.append(message)

    def wait_event(self, method: str, timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for i, event in enumerate(self.events):
            if event["method"] == method:
                return self.events[i]
        while True:
            message = self._read_one(deadline)
            if "method" in message:
                self.events.append(message)
                if message["method"] == method:
                    return message


def load_page(
    chromium: str,
    url: str,
    *,
    expressions: dict[str, str],
    width: int = 1200,
    settle: float = 0.3,
    media: str | None = None,
) -> PageRun:
    """Open ``url``, record every request, evaluate ``expressions`` (name -> JS returning a
    JSON value) and take a full-page PNG screenshot; ``media="print"`` lays the page out
    with its print styles (CSS media emulation), as a browser does for a printout."""
    run = PageRun()
    with tempfile.TemporaryDirectory(prefix="reident-chromium-") as profile:
        in_r, in_w = os.pipe()  # we write, Chromium reads on fd 3
        out_r, out_w = os.pipe()  # Chromium writes on fd 4, we read
        # Chromium's ends, moved above 99 so that mapping them onto 3 and 4 clobbers neither;
        # bash does the mapping (no preexec_fn: nothing runs in the forked child but exec)
        child_in = fcntl.fcntl(in_r, fcntl.F_DUPFD, 100)
        child_out = fcntl.fcntl(out_w, fcntl.F_DUPFD, 100)
        for fd in (in_r, out_w):
            os.close(fd)
        script = f'exec "$0" "$@" 3<&{child_in} 4>&{child_out} {child_in}<&- {child_out}>&-'
        proc = subprocess.Popen(
            ["bash", "-c", script, chromium, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(child_in, child_out),
            start_new_session=True,  # its own process group: ended together if it hangs
        )
        os.close(child_in)
        os.close(child_out)
        pipe = _Pipe(proc, in_w, out_r)
        try:
            _drive(pipe, url, expressions, (width, media), settle, run)
        finally:
            try:
                pipe.send("Browser.close")
                proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, signal.SIGKILL)  # the group this helper started
                proc.wait(timeout=10)
            os.close(in_w)
            os.close(out_r)
    return run


def _drive(
    pipe: _Pipe,
    url: str,
    expressions: dict[str, str],
    layout: tuple[int, str | None],
    settle: float,
    run: PageRun,
) -> None:
    width, media = layout
    target = pipe.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = pipe.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Network", "Runtime", "Log"):
        pipe.call(f"{domain}.enable", session=session)
    pipe.call(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        session=session,
    )
    if media is not None:
        pipe.call("Emulation.setEmulatedMedia", {"media": media}, session=session)
    pipe.events.clear()
    pipe.call("Page.navigate", {"url": url}, session=session)
    pipe.wait_event("Page.loadEventFired")
    run.loaded = True
    time.sleep(settle)  # let late requests (fonts, images) show up, if any
    for name, expression in expressions.items():
        reply = pipe.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True},
            session=session,
        )
        if "exceptionDetails" in reply:
            raise RuntimeError(f"{name}: {reply['exceptionDetails']}")
        run.evaluated[name] = reply["result"].get("value")
    size = pipe.call(
        "Runtime.evaluate",
        {
            "expression": "[document.documentElement.scrollWidth, "
            "document.documentElement.scrollHeight]",
            "returnByValue": True,
        },
        session=session,
    )["result"]["value"]
    pipe.call(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": int(size[1]), "deviceScaleFactor": 1, "mobile": False},
        session=session,
    )
    shot = pipe.call(
        "Page.captureScreenshot",
        {"format": "png", "captureBeyondViewport": True},
        session=session,
        timeout=60.0,
    )
    run.screenshot = base64.b64decode(shot["data"])
    urls: dict[str, str] = {}
    for event in pipe.events:
        method, params = event["method"], event.get("params", {})
        if method == "Network.requestWillBeSent":
            urls[params.get("requestId", "")] = params["request"]["url"]
            run.requests.append(params["request"]["url"])
        elif method == "Network.loadingFailed":
            url = urls.get(params.get("requestId", ""), "?")
            run.failed.append((url, params.get("errorText", "")))
        elif method == "Runtime.exceptionThrown":
            run.exceptions.append(json.dumps(params.get("exceptionDetails", {}))[:500])
        elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            run.console_errors.append(json.dumps(params.get("args", []))[:500])
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            run.console_errors.append(params["entry"].get("text", "")[:500])
