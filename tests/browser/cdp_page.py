"""Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe).

Python standard library only. Loads one page and records what a report must never do: console
errors, uncaught exceptions, error log entries and network requests other than the page itself.
"""
import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
    "--remote-debugging-pipe",
]


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """One Chromium process; commands are sent to one page target in flattened-session mode."""

    def __init__(self, chromium, log_path, timeout_s=60):
        self.timeout_s = timeout_s
        self.profile = tempfile.mkdtemp(prefix="ccscope-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire_fds():  # Chromium reads commands on fd 3 and writes replies on fd 4
            # Move both ends out of the way first: either may already sit on 3 or 4.
            high_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            high_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
            preexec_fn=wire_fds, close_fds=False)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next_id = 0
        self._replies = {}
        self._events = queue.Queue()
        self._lock = threading.Condition()
        threading.Thread(target=self._reader, daemon=True).start()
        self.session = None

    def _reader(self):
        buf = b""
        while True:
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg:
                    with self._lock:
                        self._replies[msg["id"]] = msg
                        self._lock.notify_all()
                else:
                    self._events.put(msg)

    def send(self, method, params=None, session=True):
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        with self._lock:
            while self._next_id not in self._replies:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise RuntimeError(f"no reply to {method} within {self.timeout_s}s "
                                       f"(chromium exit code {self.proc.poll()})")
                self._lock.wait(min(left, 0.5))
            reply = self._replies.pop(self._next_id)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def open_page(self):
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.send("Target.attachToTarget",
                             {"targetId": target["targetId"], "flatten": True}, session=False)
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")

    def events_until(self, method, timeout_s):
        """Drains events until `method` arrives (returned last) or the timeout passes."""
        seen, deadline = [], time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                ev = self._events.get(timeout=0.1)
            except queue.Empty:
                continue
            seen.append(ev)
            if method and ev.get("method") == method:
                break
        return seen

    def close(self):
        try:
            self.send("Browser.close", session=False)
        except Exception:  # noqa: BLE001 - closing anyway
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


def problems_in(events, page_url):
    """Console errors, exceptions, error log entries and foreign network requests in `events`."""
    out = []
    for ev in events:
        method, p = ev.get("method"), ev.get("params", {})
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            out.append(f"console.{p['type']}: {text}")
        elif method == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append(f"exception: {d.get('text')} {d.get('exception', {}).get('description', '')}")
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            out.append(f"log error: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        elif method == "Network.requestWillBeSent":
            url = p.get("request", {}).get("url", "")
            if url != page_url and not url.startswith("data:"):
                out.append(f"network request: {url}")
    return out


def load(browser, url, settle_s=1.0):
    """Navigates and waits for the load event; returns every event seen meanwhile."""
    browser.send("Page.navigate", {"url": url})
    events = browser.events_until("Page.loadEventFired", browser.timeout_s)
    if not any(e.get("method") == "Page.loadEventFired" for e in events):
        raise RuntimeError(f"{url} did not finish loading")
    return events + browser.events_until(None, settle_s)


def evaluate(browser, expression):
    res = browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
    if "exceptionDetails" in res:
        raise RuntimeError(f"evaluate failed: {res['exceptionDetails']}")
    return res["result"].get("value")


def screenshot(browser, path, width=1280, max_height=2400):
    """Whole page up to max_height pixels, as PNG."""
    import base64
    height = int(evaluate(browser, "document.documentElement.scrollHeight"))
    height = max(600, min(height, max_height))
    browser.send("Emulation.setDeviceMetricsOverride",
                 {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
    shot = browser.send("Page.captureScreenshot", {"format": "png"})
    with open(path, "wb") as f:
        f.write(base64.b64decode(shot["data"]))
