#!/usr/bin/python3
"""A stand-in for the venue API, for the remote poller tests.

Usage: remote_api_server.py CONTROL_FILE LOG_FILE [CERT_FILE KEY_FILE]

Binds 127.0.0.1 on a free port (HTTPS when a certificate and key are given), prints the
port on stdout, then serves every GET as CONTROL_FILE says, re-reading it per request:

  {"status": 200, "body": "<text>"}              the body, with Content-Length
  {"hang": 30}                                   say nothing for 30 s
  {"stream_bytes": N}                            200, N bytes of JSON-ish filler, no
                                                 Content-Length, written in 4 KiB chunks
  {"status": 200, "body": "...", "chunked": true} the body without Content-Length

Each request appends a JSON line to LOG_FILE: {"path", "authorization", "event"}; a streamed
body adds {"event": "stream_end", "sent": n, "complete": bool}.
"""
import json
import os
import signal
import threading
import socket
import ssl
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CONTROL, LOG = sys.argv[1], sys.argv[2]


def log(entry):
    with open(LOG, "a") as handle:
        handle.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        with open(CONTROL) as handle:
            control = json.load(handle)
        log({"event": "request", "path": self.path, "authorization": self.headers.get("Authorization")})
        if "hang" in control:
            time.sleep(control["hang"])
            self.close_connection = True
            return
        if "stream_bytes" in control:
            self.stream(control["stream_bytes"])
            return
        body = control.get("body", "").encode()
        self.send_response(control.get("status", 200))
        self.send_header("Content-Type", "application/json")
        if control.get("chunked"):
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def stream(self, total):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
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
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
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


def main():
    # Spawned from a thread that blocks most signals, the mask is inherited: unblock, so
    # SIGTERM works, and die with the parent's pipe if the test process goes away.
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
