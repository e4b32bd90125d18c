#!/usr/bin/env python3
"""How fast the screens follow (docs/kiosk.md, "How fast the screen follows"; `make bench-kiosk`).

A real daemon (`beacond run`) follows race control's state from a file (file://, polled every
0.1 s); this script rewrites the file every --interval seconds, cycling GREEN, YELLOW, RED_FLAG,
so every poll that sees a new file publishes a state change. Each change's `seq` and `ts` (the
daemon's wall clock at publication, docs/protocol.md) is the start of every figure:

- socket:   the state line read by a plain client of the daemon's socket (the reference: the
            daemon's own fan-out and the kernel, no kiosk);
- SSE:      the view's event read by a client of `beacond kiosk --web` (/events), matched by the
            view's `seq`;
- DOM:      the page's own stamp of painting it (`data-shown-at`, performance.timeOrigin +
            performance.now()) in headless Chromium driven over the DevTools protocol, matched by
            the page's `data-seq`;
- terminal: the terminal kiosk's redraw: the first read, on the pseudo-terminal it draws on, of
            its status row saying the new mode.

All clocks are this machine's CLOCK_REALTIME. Prints min, median, p99 and max per path in
milliseconds (p99 by nearest rank: of 200 changes, the second largest), and each path's median as
a ratio to the socket reference.
"""
import argparse
import fcntl
import http.client
import json
import math
import os
import pty
import re
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "BeacondTestSupport",
                                "Fixtures"))
from chromium_page import Pipe, evaluate  # noqa: E402

MODES = [("GREEN", "normal", "GREEN"), ("YELLOW", "yellow_flag", "YELLOW"), ("RED_FLAG", "red_flag", "RED FLAG")]
STAMPS = """
window.__stamps=[];
document.addEventListener("DOMContentLoaded",function(){new MutationObserver(function(){
window.__stamps.push([document.body.getAttribute("data-seq"),document.body.getAttribute("data-shown-at")])})
.observe(document.body,{attributes:true,attributeFilter:["data-shown-at"]})});
"""


def write_state(path, mode):
    scratch = path + ".new"
    with open(scratch, "w") as handle:
        json.dump({"global_mode": mode}, handle)
    os.rename(scratch, path)


def wait_for(predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


class SocketClient(threading.Thread):
    """Every `state` line from the daemon: seq -> (ts, mode, read at)."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.connection.connect(path)
        self.states = {}

    def run(self):
        buffer = b""
        while True:
            chunk = self.connection.recv(65536)
            now = time.time()
            if not chunk:
                return
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                message = json.loads(line)
                if message.get("type") == "state":
                    self.states[message["seq"]] = (message["ts"], message["mode"], now)


class EventClient(threading.Thread):
    """Every /events view with a seq: seq -> read at (the first event naming it)."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.connection = http.client.HTTPConnection("127.0.0.1", port)
        self.connection.request("GET", "/events", headers={"Accept": "text/event-stream"})
        self.response = self.connection.getresponse()
        self.seen = {}

    def run(self):
        while True:
            line = self.response.fp.readline()
            now = time.time()
            if not line:
                return
            if line.startswith(b"data:"):
                seq = json.loads(line[5:]).get("seq")
                if isinstance(seq, int) and seq not in self.seen:
                    self.seen[seq] = now


class TerminalKiosk(threading.Thread):
    """`beacond kiosk` on a pseudo-terminal of 80x24: everything it writes, each read stamped."""

    def __init__(self, beacond, socket_path, config):
        super().__init__(daemon=True)
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        environment = dict(os.environ, TERM="xterm-256color", COLORTERM="truecolor")
        self.process = subprocess.Popen(
            [beacond, "kiosk", "--socket", socket_path, "--config", config], stdin=slave, stdout=slave,
            stderr=subprocess.DEVNULL, env=environment, start_new_session=True)
        os.close(slave)
        self.reads = []  # (read at, byte offset of the end of this read)
        self.output = bytearray()

    def run(self):
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.output += chunk
            self.reads.append((time.time(), len(self.output)))

    def redraws(self, words):
        """When each of `words` in turn was first drawn on the status row (row 24), or None."""
        times = []
        position = 0
        stream = bytes(self.output)
        for word in words:
            pattern = re.compile(rb"\x1b\[24;1H(?:\x1b\[[0-9;]*m)* *" + re.escape(word.encode()) + rb"[ \x1b]")
            found = pattern.search(stream, position)
            if not found:
                times.append(None)
                continue
            position = found.end()
            times.append(next(at for at, end in self.reads if end >= found.end()))
        return times


def figures(name, samples, reference_median):
    samples = sorted(samples)
    if not samples:
        print(f"{name:<9} no samples")
        return None
    count = len(samples)

    def quantile(q):  # nearest rank
        return samples[max(0, math.ceil(q * count) - 1)]

    median = quantile(0.5)
    ratio = f"{median / reference_median:5.1f}x the socket's median" if reference_median else ""
    print(f"{name:<9} n={count:<3} min {samples[0]:7.2f}  median {median:7.2f}  p99 {quantile(0.99):7.2f}  "
          f"max {samples[-1]:7.2f} ms   {ratio}")
    return median


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--beacond", required=True)
    parser.add_argument("--changes", type=int, default=200)
    parser.add_argument("--interval", type=float, default=0.25)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    options = parser.parse_args()
    beacond = os.path.abspath(options.beacond)
    work = tempfile.mkdtemp(prefix="beacond-kiosk-latency-")
    state, socket_path = work + "/state.json", work + "/beacond.sock"
    write_state(state, "GREEN")
    config = work + "/kiosk.yaml"
    with open(config, "w") as handle:
        handle.write("kiosk:\n  languages: [en]\n")
    processes = []
    pipe = None
    try:
        daemon = subprocess.Popen(
            [beacond, "run", "--backend", "hci", "--socket", socket_path, "--state-dir", work + "/state",
             "--remote-url", "file://" + state, "--poll-interval", "0.1", "--log-level", "error"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        processes.append(daemon)
        if not wait_for(lambda: os.path.exists(socket_path), 20):
            sys.exit("kiosk-latency: the daemon never made its socket")
        web = subprocess.Popen([beacond, "kiosk", "--web", "127.0.0.1:0", "--socket", socket_path, "--config",
                                config], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        processes.append(web)
        url = re.search(r"http://\S+/", web.stdout.readline()).group(0)
        port = int(re.search(r":(\d+)/", url).group(1))
        terminal = TerminalKiosk(beacond, socket_path, config)
        processes.append(terminal.process)
        terminal.start()
        reference = SocketClient(socket_path)
        reference.start()
        events = EventClient(port)
        events.start()
        pipe = Pipe(options.chromium, [])
        target = pipe.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = pipe.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        pipe.call("Page.enable", session=session)
        pipe.call("Page.addScriptToEvaluateOnNewDocument", {"source": STAMPS}, session)
        pipe.call("Page.navigate", {"url": url}, session)
        if not wait_for(lambda: evaluate(pipe, session, "document.body.getAttribute('data-flag')") == "green", 20):
            sys.exit("kiosk-latency: the page never showed GREEN")
        time.sleep(1)
        first = max(reference.states, default=0)
        for index in range(1, options.changes + 1):
            write_state(state, MODES[index % len(MODES)][0])
            time.sleep(options.interval)
        time.sleep(1)
        stamps = evaluate(pipe, session, "window.__stamps") or []
        changes = sorted((seq, value) for seq, value in reference.states.items() if seq > first)
        socket_ms = [(read - ts) * 1000 for _, (ts, _, read) in changes]
        sse_ms = [(events.seen[seq] - ts) * 1000 for seq, (ts, _, _) in changes if seq in events.seen]
        shown = {int(seq): float(at) / 1000 for seq, at in stamps if seq and at}
        dom_ms = [(shown[seq] - ts) * 1000 for seq, (ts, _, _) in changes if seq in shown]
        words = {mode: word for _, mode, word in MODES}
        drawn = terminal.redraws([words.get(mode, "?") for _, (_, mode, _) in changes])
        terminal_ms = [(at - ts) * 1000 for (_, (ts, _, _)), at in zip(changes, drawn) if at is not None]
        print(f"kiosk latency: {len(changes)} published changes, one every {options.interval} s; "
              f"from the daemon's ts to:")
        reference_median = figures("socket", socket_ms, None)
        figures("SSE", sse_ms, reference_median)
        figures("DOM", dom_ms, reference_median)
        figures("terminal", terminal_ms, reference_median)
        missing = (len(changes) - len(sse_ms), len(changes) - len(dom_ms), len(changes) - len(terminal_ms))
        if len(changes) < options.changes or any(missing):
            print(f"kiosk latency: MISSED changes: published {len(changes)} of {options.changes}; not seen by "
                  f"SSE {missing[0]}, DOM {missing[1]}, terminal {missing[2]}")
            return 1
        return 0
    finally:
        if pipe:
            pipe.close()
        for process in reversed(processes):
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


if __name__ == "__main__":
    sys.exit(main())
