#!/usr/bin/env python3
"""Drives one page in headless Chromium over the DevTools protocol (--remote-debugging-pipe):
loads URL, waits until a JavaScript expression is true, then prints the JSON value of another.

    chromium_page.py URL --until EXPR --result EXPR [--timeout S] [--setup JS] [--chromium-flag F]...

--setup runs in the page before its own scripts (Page.addScriptToEvaluateOnNewDocument: the
browser injects it, so the page's Content-Security-Policy does not apply to it); the page's own
code is never changed. Unlike --dump-dom, the page runs in real time for as long as it takes, so
timers, WebAudio and speech synthesis behave as they do on a kiosk. Exit 0 with the result on
stdout; 1 when the expression never became true (the result is still printed); 2 on a protocol
failure."""
import argparse
import fcntl
import json
import os
import signal
import subprocess
import sys
import time


class Pipe:
    """Chromium reads commands on its fd 3 and writes replies on its fd 4, each NUL-terminated."""

    def __init__(self, chromium, flags):
        to_browser_read, self.to_browser = os.pipe()
        self.from_browser, from_browser_write = os.pipe()
        # Out of the way of 3 and 4 first, so that neither dup2 below overwrites the other's source.
        to_browser_read = fcntl.fcntl(to_browser_read, fcntl.F_DUPFD, 10)
        from_browser_write = fcntl.fcntl(from_browser_write, fcntl.F_DUPFD, 10)

        def arrange():
            os.dup2(to_browser_read, 3)
            os.dup2(from_browser_write, 4)

        # subprocess closes every descriptor not in pass_fds after preexec_fn: keep 3 and 4.
        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-pipe"] + flags + ["about:blank"],
            pass_fds=(3, 4), preexec_fn=arrange,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.buffer = b""
        self.next_id = 0

    def call(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self.buffer:
                chunk = os.read(self.from_browser, 65536)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe")
                self.buffer += chunk
            line, self.buffer = self.buffer.split(b"\0", 1)
            reply = json.loads(line)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def close(self):
        try:
            self.call("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def evaluate(pipe, session, expression):
    result = pipe.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)
    if "exceptionDetails" in result:
        return None
    return result.get("result", {}).get("value")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--until", required=True)
    parser.add_argument("--result", required=True)
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("--setup")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromium-flag", action="append", default=[])
    options = parser.parse_args()
    # A browser that stops answering must not hang the caller: SIGALRM ends the script (and the
    # browser, whose pipe closes with it) well after the wait's own timeout.
    signal.alarm(int(options.timeout) + 30)
    pipe = Pipe(options.chromium, options.chromium_flag)
    try:
        target = pipe.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = pipe.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        pipe.call("Page.enable", session=session)
        if options.setup:
            pipe.call("Page.addScriptToEvaluateOnNewDocument", {"source": options.setup}, session)
        pipe.call("Page.navigate", {"url": options.url}, session)
        deadline = time.monotonic() + options.timeout
        reached = False
        while time.monotonic() < deadline:
            if evaluate(pipe, session, options.until) is True:
                reached = True
                break
            time.sleep(0.05)
        print(json.dumps(evaluate(pipe, session, options.result)))
        return 0 if reached else 1
    except (RuntimeError, OSError, KeyError) as error:
        print(f"chromium_page.py: {error}", file=sys.stderr)
        return 2
    finally:
        pipe.close()


if __name__ == "__main__":
    sys.exit(main())
