#!/usr/bin/env python3
"""Asks a running `beacond run` for its status once and writes the reply line to OUTPUT.
With --devices the request asks for the other devices heard too, which lifts the hci scanners'
kernel filter ({"cmd":"status","devices":true}).

usage: ask.py SOCKET OUTPUT [--devices]
"""
import argparse
import json
import socket


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("socket")
    parser.add_argument("output")
    parser.add_argument("--devices", action="store_true")
    args = parser.parse_args()
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(10)
    client.connect(args.socket)
    reader = client.makefile("r", encoding="utf-8")
    request = {"cmd": "status", "devices": True} if args.devices else {"cmd": "status"}
    client.sendall((json.dumps(request) + "\n").encode())
    for line in reader:
        if json.loads(line).get("type") == "status":
            with open(args.output, "w", encoding="utf-8") as output:
                output.write(line)
            return


if __name__ == "__main__":
    main()
