#!/usr/bin/env python3
"""A venue day as a btsnoop capture, for `beacond report` at scale (Benchmarks/report-scale.sh).

The capture is what a venue scanner hears (docs/report.md, "Scale"; docs/frames.md for the frame):

- --beacons circuit beacons (GeoRacing v1 frames, company id 0x1234, manufacturer data, TTL 10 s,
  each beacon its own public address) in --zones zones, beacons spread evenly over the zones;
  every beacon heard once a second, at its own place in the second, RSSI wandering -85..-55 dBm;
- every 5 s one zone's beacons all change mode together, bumping their sequence. v1 has four modes
  (normal 0, safety_car 1, red_flag 2, evacuation 3; no yellow): a zone is normal most of the time,
  with safety-car and red-flag episodes of 30 s to 10 min (short ones more often; a safety car
  may turn into a red flag and back) and a few evacuations of 5 to 60 s (at least 3);
- phones' non-GeoRacing adverts (iBeacon, company 0x004C), two a second, so the scanner is never
  silent; and one 40-second scanner gap (no record at all), 37 % of the way in.

Records are H4 HCI events (datalink 1002): LE Meta, LE Advertising Report, one report per event,
ADV_NONCONN_IND, public address. Deterministic for a given --seed. Prints what it wrote on stderr.
"""
import argparse
import datetime
import random
import struct
import sys
import time

BTSNOOP_EPOCH = 0x00DCDDB30F2F8000  # µs from 0000-01-01 to 1970-01-01, as btsnoop counts
RECORD = struct.Struct(">IIIIq")  # original length, included length, flags, drops, timestamp
FLAGS_EVENT_RECEIVED = 3
COMPANY_GEORACING = 0x1234
NORMAL, SAFETY_CAR, RED_FLAG, EVACUATION = 0, 1, 2, 3
MODE_NAMES = ["normal", "safety_car", "red_flag", "evacuation"]
TICK = 5  # seconds between mode changes
GAP = 40  # seconds of the scanner gap
TTL = 10
RSSI_LOW, RSSI_HIGH = -85, -55
PHONES = 6


def advertising_report(address, data):
    """An H4 LE Advertising Report event, without its trailing RSSI byte (added per record)."""
    body = bytes([0x02, 0x01, 0x03, 0x00]) + address.to_bytes(6, "little") + bytes([len(data)]) + data
    return bytes([0x04, 0x3E, len(body) + 1]) + body  # the event's length counts the RSSI byte


def georacing_v1(zone, mode, sequence):
    frame = struct.pack(">BHBBHB", 1, zone, mode, 0, sequence, TTL)
    return bytes([0x02, 0x01, 0x06, len(frame) + 3, 0xFF]) + struct.pack("<H", COMPANY_GEORACING) + frame


def ibeacon(phone):
    payload = bytes([0x02, 0x15]) + bytes([0xAB] * 16) + struct.pack(">HHb", 1, phone, -59)
    return bytes([0x02, 0x01, 0x06, len(payload) + 3, 0xFF]) + struct.pack("<H", 0x004C) + payload


def episode_length(rng):
    """30 s to 10 min, short ones more often (log-uniform), in whole ticks."""
    seconds = 30 * 20 ** rng.random()
    return max(30, int(round(seconds / TICK)) * TICK)


def schedule(rng, seconds, zones, gap_start):
    """The mode changes: [(second, zone index, mode)], one every TICK s."""
    ticks = list(range(TICK, seconds, TICK))
    evacuations = max(3, round(seconds / 21600))
    # Evacuations at random ticks, never in the first 5 % nor near the scanner gap.
    allowed = [t for t in ticks[len(ticks) // 20:] if not gap_start - 70 <= t <= gap_start + GAP + 10]
    evac_ticks = set(rng.sample(allowed, evacuations))
    mode = [NORMAL] * zones
    due = [0] * zones  # when a zone's episode is due to end
    changes = []
    cap = max(1, int(zones * 0.35))  # at most this many zones in an episode, so normal dominates
    for second in ticks:
        busy = [zone for zone in range(zones) if mode[zone] != NORMAL]
        overdue = [zone for zone in busy if due[zone] <= second]
        if second in evac_ticks:
            quiet = [zone for zone in range(zones) if mode[zone] == NORMAL] or list(range(zones))
            zone = rng.choice(quiet)
            mode[zone], due[zone] = EVACUATION, second + rng.randrange(1, 13) * TICK  # 5–60 s
        elif overdue:
            # Evacuations end first, then the longest overdue episode.
            zone = min(overdue, key=lambda z: (mode[z] != EVACUATION, due[z]))
            mode[zone] = NORMAL
        elif len(busy) < cap:
            zone = rng.choice([zone for zone in range(zones) if mode[zone] == NORMAL])
            mode[zone] = SAFETY_CAR if rng.random() < 0.6 else RED_FLAG
            due[zone] = second + episode_length(rng)
        else:
            # Every episode is still running: one escalates or eases (SC <-> red flag).
            candidates = [zone for zone in busy if mode[zone] != EVACUATION]
            zone = rng.choice(candidates)
            mode[zone] = RED_FLAG if mode[zone] == SAFETY_CAR else SAFETY_CAR
        changes.append((second, zone, mode[zone]))
    return changes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--beacons", type=int, default=200)
    parser.add_argument("--zones", type=int, default=20)
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--start", default="2026-05-16T06:00:00Z", help="UTC start (ISO 8601)")
    parser.add_argument("-o", dest="output", required=True)
    args = parser.parse_args()
    if args.zones < 1 or args.beacons < args.zones or args.beacons > 190 * 5 or args.hours * 3600 < 600:
        parser.error("need 1 <= zones <= beacons <= 950 and at least 10 minutes")

    began = time.monotonic()
    rng = random.Random(args.seed)
    start = datetime.datetime.fromisoformat(args.start.replace("Z", "+00:00"))
    base = int(start.timestamp()) * 1_000_000 + BTSNOOP_EPOCH
    seconds = int(args.hours * 3600)
    gap_start = int(seconds * 0.37)
    changes = schedule(rng, seconds, args.zones, gap_start)

    # Beacon i: zone i * zones // beacons + 1; address C0:FF:EE:00:hi:lo; heard at i * slot µs into
    # each second plus up to 2 ms of jitter. Phones sit between beacons' slots.
    slot = 1_000_000 // (args.beacons + PHONES + 1)
    zone_of = [i * args.zones // args.beacons for i in range(args.beacons)]
    members = [[i for i in range(args.beacons) if zone_of[i] == zone] for zone in range(args.zones)]
    sequence = [rng.randrange(0, 0x10000) for _ in range(args.zones)]
    rssi_bytes = {r: bytes([r & 0xFF]) for r in range(RSSI_LOW, RSSI_HIGH + 1)}

    def bodies(i, mode):
        packet = advertising_report(0xC0FFEE000000 + i + 1, georacing_v1(zone_of[i] + 1, mode, sequence[zone_of[i]]))
        return {r: packet + b for r, b in rssi_bytes.items()}, len(packet) + 1

    packets = [bodies(i, NORMAL) for i in range(args.beacons)]
    rssi = [rng.randint(RSSI_LOW, RSSI_HIGH) for _ in range(args.beacons)]
    offset = [i * slot for i in range(args.beacons)]
    jitter = min(slot // 2, 2000)
    phone_packets = []
    for phone in range(PHONES):
        packet = advertising_report(0x4A1122330000 + phone, ibeacon(phone)) + rssi_bytes[-85 + phone]
        # Phone p sits in the slot after beacon (p * beacons // PHONES), in a slot of its own.
        phone_packets.append((phone, packet, (phone * args.beacons // PHONES) * slot + slot // 2 + jitter))
    phone_packets.sort(key=lambda p: p[2])

    records = beacon_records = evacuations = 0
    next_change = 0
    pack = RECORD.pack
    getrandbits = rng.getrandbits
    with open(args.output, "wb", buffering=1 << 22) as out:
        out.write(b"btsnoop\0" + struct.pack(">II", 1, 1002))
        for second in range(seconds):
            while next_change < len(changes) and changes[next_change][0] == second:
                _, zone, mode = changes[next_change]
                next_change += 1
                sequence[zone] = (sequence[zone] + 1) & 0xFFFF
                evacuations += mode == EVACUATION
                for i in members[zone]:
                    packets[i] = bodies(i, mode)
            if gap_start <= second < gap_start + GAP:
                continue
            at = base + second * 1_000_000
            chunk = []
            add = chunk.append
            phones = [p for p in phone_packets if (second + p[0]) % 3 != 0]  # two of three each second
            k = 0
            for i in range(args.beacons):
                while k < len(phones) and phones[k][2] < offset[i]:
                    _, packet, phone_at = phones[k]
                    add(pack(len(packet), len(packet), FLAGS_EVENT_RECEIVED, 0, at + phone_at))
                    add(packet)
                    k += 1
                r = rssi[i] + (getrandbits(2) - 1 if getrandbits(1) else 0)  # -1, 0, +1, +2 half the time
                r = RSSI_LOW if r < RSSI_LOW else RSSI_HIGH if r > RSSI_HIGH else r
                rssi[i] = r
                by_rssi, length = packets[i]
                add(pack(length, length, FLAGS_EVENT_RECEIVED, 0, at + offset[i] + getrandbits(11) % jitter))
                add(by_rssi[r])
            for _, packet, phone_at in phones[k:]:
                add(pack(len(packet), len(packet), FLAGS_EVENT_RECEIVED, 0, at + phone_at))
                add(packet)
            out.write(b"".join(chunk))
            records += len(chunk) // 2
            beacon_records += args.beacons
        size = out.tell()

    by_mode = [0, 0, 0, 0]
    share = [0, 0, 0, 0]  # zone-seconds in each mode
    current, since = [NORMAL] * args.zones, [0] * args.zones
    for second, zone, mode in changes:
        by_mode[mode] += 1
        share[current[zone]] += second - since[zone]
        current[zone], since[zone] = mode, second
    for zone in range(args.zones):
        share[current[zone]] += seconds - since[zone]
    shares = ", ".join(f"{MODE_NAMES[m]} {share[m] * 100 / (seconds * args.zones):.1f} %" for m in range(4))
    gap_at = start + datetime.timedelta(seconds=gap_start)
    print(
        f"venue-day: {args.output}: {records:,} records ({beacon_records:,} beacon reports, "
        f"{records - beacon_records:,} phone adverts), {size / 1e6:.1f} MB, {args.hours:g} h from "
        f"{start.isoformat().replace('+00:00', 'Z')}; {args.beacons} beacons in {args.zones} zones; "
        f"{len(changes):,} zone mode changes (to normal {by_mode[0]:,}, safety_car {by_mode[1]:,}, "
        f"red_flag {by_mode[2]:,}, evacuation {by_mode[3]:,}), {evacuations} evacuations; zone time: {shares}; "
        f"scanner gap {GAP} s at {gap_at.strftime('%H:%M:%S')}Z; {time.monotonic() - began:.1f} s",
        file=sys.stderr)


if __name__ == "__main__":
    main()
