#!/usr/bin/env python3
"""Advertises GeoRacing v1 frames from one controller through raw HCI (legacy, non-connectable).

btvirt's controllers send one advertising report per advertising enable, so a beacon's repeats
are made by toggling advertising enable every --interval-ms. Each STEP is MODE:SEQ:TTL:SECONDS,
or hex:FRAME:SECONDS for any frame after the company id (a command frame, a user beacon), or
ad:DATA:SECONDS for advertising data as given (another company's device);
the times of the first enable and of the last disable of each step (CLOCK_BOOTTIME, "t" and
"end") go to --log as a JSON line. "t" is taken just before the first enable command is sent: the
controller may advertise, and the scanner publish, before its Command Complete reaches us.

--random-address AA:BB:CC:DD:EE:FF advertises from that (random) address instead of the
controller's own: a spoofer taking a beacon's address.

usage: advertise.py --adapter hci0 [--zone 3] [--interval-ms 250] [--random-address ADDR] --log FILE STEP...
"""
import argparse
import json
import socket
import struct
import sys
import time

MODES = {"normal": 0, "safety_car": 1, "red_flag": 2, "evacuation": 3}
COMPANY_ID = 0x1234
SOL_HCI, HCI_FILTER = 0, 2
HCI_COMMAND_PKT, HCI_EVENT_PKT = 0x01, 0x04
EVT_CMD_COMPLETE, EVT_CMD_STATUS = 0x0E, 0x0F
LE_SET_RANDOM_ADDRESS = 0x2005
LE_SET_ADV_PARAMETERS, LE_SET_ADV_DATA, LE_SET_ADV_ENABLE = 0x2006, 0x2008, 0x200A


def now():
    return time.clock_gettime(time.CLOCK_BOOTTIME)


class Controller:
    def __init__(self, adapter):
        index = int(adapter.removeprefix("hci"))
        self.sock = socket.socket(socket.AF_BLUETOOTH, socket.SOCK_RAW, socket.BTPROTO_HCI)
        self.sock.bind((index,))
        events = (1 << EVT_CMD_COMPLETE) | (1 << EVT_CMD_STATUS)
        self.sock.setsockopt(SOL_HCI, HCI_FILTER, struct.pack("<IIIH2x", 1 << HCI_EVENT_PKT, events, 0, 0))
        self.sock.settimeout(2.0)

    def command(self, opcode, params=b""):
        """Sends a command and returns its status; raises on a timeout or a failure status."""
        self.sock.send(struct.pack("<BHB", HCI_COMMAND_PKT, opcode, len(params)) + params)
        deadline = now() + 2.0
        while now() < deadline:
            packet = self.sock.recv(260)
            if len(packet) < 3 or packet[0] != HCI_EVENT_PKT:
                continue
            event, body = packet[1], packet[3:]
            if event == EVT_CMD_COMPLETE and len(body) >= 4 and struct.unpack("<H", body[1:3])[0] == opcode:
                status = body[3]
            elif event == EVT_CMD_STATUS and len(body) >= 4 and struct.unpack("<H", body[2:4])[0] == opcode:
                status = body[0]
            else:
                continue
            if status != 0:
                raise RuntimeError(f"command 0x{opcode:04x} failed: status 0x{status:02x}")
            return
        raise RuntimeError(f"command 0x{opcode:04x}: no answer within 2 s")


def advertising_data(frame):
    manufacturer = struct.pack("<BH", 0xFF, COMPANY_ID) + frame
    data = bytes([2, 0x01, 0x06, len(manufacturer)]) + manufacturer
    return bytes([len(data)]) + data.ljust(31, b"\0")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--adapter", required=True)
    parser.add_argument("--zone", type=int, default=3)
    parser.add_argument("--interval-ms", type=int, default=250)
    parser.add_argument("--log", required=True)
    parser.add_argument("--random-address")
    parser.add_argument("steps", nargs="+")
    args = parser.parse_args()

    controller = Controller(args.adapter)
    # ADV_NONCONN_IND at 100 ms, the public (or the given random) address, all three channels.
    own_address_type = 0x01 if args.random_address else 0x00
    parameters = struct.pack("<HHBBB6sBB", 0x00A0, 0x00A0, 0x03, own_address_type, 0x00, bytes(6), 0x07, 0x00)
    try:
        controller.command(LE_SET_ADV_ENABLE, b"\x00")
    except RuntimeError:
        pass  # "Command Disallowed" when it was off already
    if args.random_address:
        controller.command(LE_SET_RANDOM_ADDRESS, bytes.fromhex(args.random_address.replace(":", ""))[::-1])
    controller.command(LE_SET_ADV_PARAMETERS, parameters)
    with open(args.log, "a") as log:
        for step in args.steps:
            if step.startswith("ad:"):
                _, data_hex, seconds = step.split(":")
                raw = bytes.fromhex(data_hex)
                data = bytes([len(raw)]) + raw.ljust(31, b"\0")
                entry = {"data": data_hex}
            elif step.startswith("hex:"):
                _, frame_hex, seconds = step.split(":")
                data = advertising_data(bytes.fromhex(frame_hex))
                entry = {"frame": frame_hex}
            else:
                mode, seq, ttl, seconds = step.split(":")
                frame = struct.pack(">BHBBHB", 1, args.zone, MODES[mode], 0, int(seq), int(ttl))
                data = advertising_data(frame)
                entry = {"zone": args.zone, "mode": mode, "seq": int(seq), "ttl": int(ttl)}
            controller.command(LE_SET_ADV_DATA, data)
            started, enables = None, 0
            end = now() + float(seconds)
            while now() < end:
                sent = now()
                controller.command(LE_SET_ADV_ENABLE, b"\x01")
                enables += 1
                if started is None:
                    started = sent
                time.sleep(args.interval_ms / 1000)
                controller.command(LE_SET_ADV_ENABLE, b"\x00")
            entry.update({"t": started, "end": now(), "enables": enables, "adapter": args.adapter})
            log.write(json.dumps(entry) + "\n")
            log.flush()


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # the scenario script reports it and the check fails
        print(f"advertise.py: {error}", file=sys.stderr)
        sys.exit(1)
