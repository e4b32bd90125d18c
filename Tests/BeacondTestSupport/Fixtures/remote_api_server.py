#!/usr/bin/python3
"""A stand-in for the venue API, for the remote poller tests and the remote fault-injection tests
(docs/robustness.md): it answers as the test says, misbehaving on request.

Usage: remote_api_server.py CONTROL_FILE LOG_FILE [CERT_FILE KEY_FILE]

Binds 127.0.0.1 on a free port (HTTPS when a certificate and key are given), prints the port on
stdout, then answers every GET as CONTROL_FILE says, re-reading it per request:

  {"status": 200, "body": "<text>"}           the body (UTF-8), with Content-Length
  {"body_hex": "c3 28"}                       raw bytes instead of "body" (invalid UTF-8 ...)
  {"headers": {"Location": "http://..."}}     extra response headers (a redirect)
  {"chunked": true}                           the body without Content-Length, then the
                                              connection closed
  {"content_length": N}                       declare N bytes whatever the body holds; when N is
                                              larger, the body is sent, then the connection closed
  {"hang": 30}                                read the request, then say nothing for 30 s
  {"stream_bytes": N, "declare": false}       200, N bytes of JSON-ish filler in 4 KiB writes,
                                              without Content-Length ("declare": true sends N as it)
  {"flip": [CONTROL, CONTROL, ...], "period": 0.1}
                                              the one at index int(time / period) % count

A POST (the beacon's heartbeat) is answered the same way. Each request appends a JSON line to
LOG_FILE: {"event": "request", "method", "path", "authorization", "t": <unix s>}, with "body" (as
text) for a POST; a streamed body adds {"event": "stream_end", "sent": n, "complete": bool}.
"""
import json
import os
import signal
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONTROL, LOG = sys.argv[1], sys.argv[2]
LOG_LOCK = threading.Lock()
# What a client that goes away mid-answer raises.
GONE = (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError)


def log(entry):
    with LOG_LOCK, open(LOG, "a") as handle:
        handle.write(json.dumps(entry) + "\n")


def current_control():
    with open(CONTROL) as handle:
        control = json.load(handle)
    if "flip" in control:
        choices = control["flip"]
        control = choices[int(time.time() / control.get("period", 0.1)) % len(choices)]
    return control


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.answer("POST", self.rfile.read(min(length, 65536)).decode("utf-8", "replace"))

    def do_GET(self):
        self.answer("GET", None)

    def answer(self, method, body_received):
        control = current_control()
        entry = {
            "event": "request", "method": method, "path": self.path,
            "authorization": self.headers.get("Authorization"), "t": time.time(),
        }
        if body_received is not None:
            entry["body"] = body_received
        log(entry)
        if "hang" in control:
            time.sleep(control["hang"])
            self.close_connection = True
            return
        if "stream_bytes" in control:
            self.stream(control["stream_bytes"], control.get("declare", False))
            return
        if "body_hex" in control:
            body = bytes.fromhex(control["body_hex"])
        else:
            body = control.get("body", "").encode()
        chunked = control.get("chunked", False)
        length = control.get("content_length", len(body))
        try:
            self.send_response(control.get("status", 200))
            self.send_header("Content-Type", "application/json")
            for name, value in control.get("headers", {}).items():
                self.send_header(name, value)
            if not chunked:
                self.send_header("Content-Length", str(length))
            if chunked or length > len(body):
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
        except GONE:
            pass
        if chunked or length != len(body):
            self.close_connection = True

    def stream(self, total, declare):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if declare:
            self.send_header("Content-Length", str(total))
        self.send_header("Connection", "close")
        self.end_headers()
        chunk = b'{"pad":"' + b"x" * 4080 + b'"},'
        sent = 0
        complete = False
        try:
            while sent < total:
                piece = chunk[: total - sent]
                self.wfile.write(piece)
                self.wfile.flush()
                sent += len(piece)
            complete = True
        except GONE:
            pass
        self.close_connection = True
        log({"event": "stream_end", "sent": sent, "complete": complete})


def watch_parent():
    # stdin is a pipe from the test process: EOF means it is gone.
    sys.stdin.buffer.read()
    os._exit(0)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    address_family = socket.AF_INET

    def handle_error(self, request, client_address):
        # A client that goes away mid-handshake (the daemon refusing a certificate) is expected.
        pass


def main():
    # A child spawned from a test thread inherits its blocked signals: unblock them, so SIGTERM
    # works, and die with the parent's pipe if the test process goes away.
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    threading.Thread(target=watch_parent, daemon=True).start()
    server = Server(("127.0.0.1", 0), Handler)
    if len(sys.argv) >= 5:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[3], sys.argv[4])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
