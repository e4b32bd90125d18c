#!/usr/bin/env python3
"""A stand-in for race control's GET /api/state: serves STATE_FILE's bytes as JSON on 127.0.0.1.

`set MODE TEMPERATURE` (a second form) writes STATE_FILE as GeoRacing's server shapes it and logs
the change's time (CLOCK_BOOTTIME, the clock subscribe.py logs) to LOG as a JSON line.

usage: racecontrol.py serve PORT STATE_FILE
       racecontrol.py set STATE_FILE LOG MODE TEMPERATURE
"""
import http.server
import json
import os
import sys
import time


def serve(port, path):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            try:
                with open(path, "rb") as file:
                    body = file.read()
            except OSError:
                body = b"{}"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def set_state(path, log, mode, temperature):
    body = json.dumps({"id": 1, "global_mode": mode, "temperature": temperature}).encode()
    with open(path + ".new", "wb") as file:
        file.write(body)
    with open(log, "a") as file:
        os.replace(path + ".new", path)
        file.write(json.dumps({"t": time.clock_gettime(time.CLOCK_BOOTTIME), "mode": mode,
                               "temperature": temperature}) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]), sys.argv[3])
    else:
        set_state(*sys.argv[2:6])
