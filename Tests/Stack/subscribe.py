#!/usr/bin/env python3
"""A socket client of `beacond run`: writes every line the daemon sends, with its arrival time
(CLOCK_BOOTTIME, the clock advertise.py logs), as {"t": ..., "msg": {...}} lines to OUTPUT.
Waits up to --wait seconds for the socket to appear; ends at the daemon's bye or EOF. With
--beacons it subscribes to beacon messages too. SOCKET "-" stamps the JSON lines of standard input
instead (`beacond scan --json`).

usage: subscribe.py SOCKET OUTPUT [--wait S] [--beacons]
"""
import argparse
import json
import socket
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("socket")
    parser.add_argument("output")
    parser.add_argument("--wait", type=float, default=30)
    parser.add_argument("--beacons", action="store_true")
    args = parser.parse_args()
    if args.socket == "-":
        copy(sys.stdin, args.output)
        return
    deadline = time.monotonic() + args.wait
    while True:
        try:
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.connect(args.socket)
            break
        except OSError as error:
            client.close()
            if time.monotonic() > deadline:
                print(f"subscribe.py: cannot connect to {args.socket}: {error}", file=sys.stderr)
                sys.exit(1)
            time.sleep(0.1)
    if args.beacons:
        client.sendall(b'{"cmd":"subscribe","beacons":true}\n')
    with client.makefile("r", encoding="utf-8") as lines:
        copy(lines, args.output)


def copy(lines, path):
    with open(path, "a") as output:
        for line in lines:
            t = time.clock_gettime(time.CLOCK_BOOTTIME)
            try:
                message = json.loads(line)
            except ValueError:
                continue
            output.write(json.dumps({"t": t, "msg": message}) + "\n")
            output.flush()


if __name__ == "__main__":
    main()
