"""A headless Chromium driven through the DevTools protocol over a pipe (`--remote-debugging-pipe`:
JSON messages ending in NUL on file descriptors 3 and 4), with the standard library only. Each
`Tab` lives in a browser context of its own, so two tabs are two people with their own cookies."""
import json
import os
import shutil
import subprocess
import time


class Browser:
    def __init__(self, profile):
        command = [shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
                   "--no-first-run", "--disable-background-networking", "--disable-component-update",
                   "--disable-sync", f"--user-data-dir={profile}", "--remote-debugging-pipe"]
        to_browser_read, self._write = os.pipe()
        self._read, from_browser_write = os.pipe()
        # The child's fd 3 is what it reads commands from, fd 4 where it writes replies.
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=lambda: (os.dup2(to_browser_read, 3), os.dup2(from_browser_write, 4)))
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next = 0

    def send(self, method, params=None, session=None, timeout=60):
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\0" not in self._buffer:
                chunk = os.read(self._read, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed the pipe")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
        raise TimeoutError(method)

    def tab(self, url):
        context = self.send("Target.createBrowserContext")["browserContextId"]
        target = self.send("Target.createTarget", {"url": "about:blank", "browserContextId": context})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        tab = Tab(self, session)
        tab.go(url)
        return tab

    def close(self):
        self.process.kill()
        self.process.wait(timeout=30)
        os.close(self._write)
        os.close(self._read)


class Tab:
    def __init__(self, browser, session):
        self.browser, self.session = browser, session

    def send(self, method, params=None):
        return self.browser.send(method, params, session=self.session)

    def go(self, url):
        self.send("Page.navigate", {"url": url})
        self.wait(f"location.href === {json.dumps(url)} && document.readyState === 'complete'")

    def eval(self, expression):
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return result["result"].get("value")

    def wait(self, condition, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.eval(condition):
                    return
            except RuntimeError:
                pass  # the page is being replaced
            time.sleep(0.3)
        raise TimeoutError(f"{condition} after {timeout} s; page: {self.text()[:500]}")

    def text(self):
        return self.eval("document.body ? document.body.innerText : ''") or ""

    def choose_file(self, selector, path):
        root = self.send("DOM.getDocument")["root"]["nodeId"]
        node = self.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
        self.send("DOM.setFileInputFiles", {"files": [str(path)], "nodeId": node})
