#!/usr/bin/env python3
"""Host-side checks of what the guest wrote (Tests/Stack/guest-*.sh), one line per check, then
"test-stack: N passed, M failed". Exit 1 when any failed.

usage: check.py BEACOND RESULTS_DIR/legacy RESULTS_DIR/hci [RESULTS_DIR/bluez [RESULTS_DIR/systemd]]
  BEACOND: the binary the guest ran (its `replay` decodes the recording here, on the host).
  The bluez boot's checks are in check_bluez.py, the systemd boot's in check_systemd.py, the
  several adapters' (in the legacy boot) in check_adapters.py.
"""
import json
import os
import re
import subprocess
import sys

PUBLISH_WITHIN_S = 2.0
results = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    results["passed" if ok else "failed"] += 1
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + (f" ({detail})" if detail else ""))


def lines(path):
    try:
        with open(path) as file:
            return [json.loads(line) for line in file if line.strip()]
    except (OSError, ValueError) as error:
        print(f"     {path}: {error}")
        return []


def text(path):
    try:
        with open(path, errors="replace") as file:
            return file.read()
    except OSError:
        return ""


def states(directory, name):
    return [(line["t"], line["msg"]) for line in lines(f"{directory}/{name}-states.jsonl")
            if line["msg"].get("type") == "state"]


def publication_latency(published, advert):
    """Seconds from the advert's first enable to the first state publishing its flag and seq."""
    for t, state in published:
        beacon = state.get("beacon") or {}
        if t >= advert["t"] - 0.001 and state["mode"] == advert["mode"] and beacon.get("seq") == advert["seq"]:
            return t - advert["t"]
    return None


def check_flags(group, directory, name, adverts):
    published = states(directory, name)
    latencies = []
    for advert in adverts:
        latency = publication_latency(published, advert)
        label = f"{group}: {advert['mode']} seq {advert['seq']} published within {PUBLISH_WITHIN_S:g} s"
        check(label, latency is not None and latency <= PUBLISH_WITHIN_S,
              "never published" if latency is None else f"{latency * 1000:.0f} ms")
        if latency is not None:
            latencies.append(latency)
    beacons = [s["beacon"] for _, s in published if s.get("beacon")]
    check(f"{group}: RSSI 127 (not available) passed the -60 dBm floor",
          bool(beacons) and all(b["rssi"] is None for b in beacons),
          f"{len(beacons)} published beacon states, rssi {sorted({str(b['rssi']) for b in beacons})}")
    return latencies


def btmon_blocks(path):
    """btmon's decoding of a btmon -w file, as (header, body) blocks."""
    output = subprocess.run(["btmon", "-r", path], capture_output=True, text=True, errors="replace").stdout
    blocks = []
    for line in output.splitlines():
        if line[:2] in ("< ", "> ", "@ ", "= "):
            blocks.append([line, ""])
        elif blocks:
            blocks[-1][1] += line + "\n"
    return blocks


def check_scan_disabled(group, path, opcode):
    """After SIGTERM: the last scan enable command on hci1 disables, and is answered with success."""
    blocks = [b for b in btmon_blocks(path) if "[hci1]" in b[0]]
    commands = [i for i, (h, _) in enumerate(blocks) if h.startswith("< ") and opcode in h]
    if not commands:
        return check(f"{group}: scan disabled after SIGTERM", False, f"no {opcode} command on hci1 in {path}")
    last = commands[-1]
    disabled = "Disabled (0x00)" in blocks[last][1].split("Filter")[0]
    answer = next((b for b in blocks[last + 1:] if b[0].startswith("> ") and opcode in b[1]), None)
    success = answer is not None and "Status: Success (0x00)" in answer[1]
    check(f"{group}: after SIGTERM the btmon trace shows scan enable 0x00 ({opcode}) answered with success",
          disabled and success, f"disable {disabled}, success {success}")


def tshark_reports(path, adapter=None):
    """(subevent, address, company, data) of every advertising report tshark decodes in path."""
    display = "bthci_evt.le_meta_subevent == 0x02 || bthci_evt.le_meta_subevent == 0x0d"
    if adapter is not None:
        display = f"hci_mon.adapter_id == {adapter} && ({display})"
    output = subprocess.run(
        ["tshark", "-r", path, "-Y", display, "-T", "fields", "-e", "bthci_evt.bd_addr",
         "-e", "btcommon.eir_ad.entry.company_id", "-e", "btcommon.eir_ad.entry.data"],
        capture_output=True, text=True).stdout
    return [tuple(line.split("\t")) for line in output.splitlines() if line.strip()]


def beacond_reports(records):
    """The same tuples from beacond's JSON lines."""
    reports = []
    for r in records:
        mfr = r["mfr"][0] if r.get("mfr") else {"company": None, "data": ""}
        company = "" if mfr["company"] is None else f"0x{mfr['company']:04x}"
        reports.append((r["addr"].lower(), company, mfr["data"]))
    return reports


def scanner_transitions(published):
    changes, last = [], None
    for t, state in published:
        current = state["scanner"]["state"]
        if current != last:
            changes.append((t, current))
            last = current
    return changes


def step_time(directory, text_in_step):
    for line in text(f"{directory}/steps.log").splitlines():
        if text_in_step in line:
            return float(line.split()[0])
    return None


def legacy_group(directory):
    log = text(f"{directory}/legacy-beacond.log")
    check("legacy: beacond chose legacy scanning on btvirt's LE-only (4.x) controller",
          "scanning on hci1: legacy scan commands" in log)
    latencies = check_flags("legacy", directory, "legacy", lines(f"{directory}/legacy-adverts.jsonl"))
    check_scan_disabled("legacy", f"{directory}/legacy-btmon.btsnoop", "(0x08|0x000c)")
    check("legacy: beacond run exited 0 after SIGTERM", text(f"{directory}/legacy-beacond.rc").strip() == "0")
    beacon_group(directory)
    frames_group(directory)
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    import check_signed
    check_signed.signed_group(sys.modules[__name__], directory)
    return latencies


def frames_group(directory):
    """Command frames and user beacons sent from hci2 (advertise.py hex steps), heard on hci1."""
    steps = {entry["frame"]: entry for entry in lines(f"{directory}/legacy-frames-adverts.jsonl")}
    published = states(directory, "legacy")
    evacuate, normal = steps.get("ff01"), steps.get("ff00")
    shown = next(((t, s) for t, s in published if evacuate and t >= evacuate["t"] and s["mode"] == "evacuation"),
                 None)
    key = ((shown or (0, {}))[1].get("beacon") or {}).get("key", "")
    check("frames: the staff app's evacuate command was published as a circuit-wide evacuation, keyed by its sender",
          shown is not None and key.startswith("command @ ") and shown[1].get("zone") is None,
          "never" if shown is None else f"{(shown[0] - evacuate['t']) * 1000:.0f} ms, {key}")
    cleared = next((t for t, s in published if normal and t >= normal["t"] and s["mode"] == "unknown"), None)
    check("frames: the same sender's normal command cleared it long before its 30 s TTL",
          cleared is not None and cleared - normal["t"] < 5,
          "never" if cleared is None else f"{cleared - normal['t']:.1f} s")
    status = (lines(f"{directory}/legacy-status.json") or [{}])[0]
    counters = status.get("counters") or {}
    user = [steps.get("0112345678"), steps.get("01a1b2c3d4422a8f5c3fa1cac1")]
    sent = sum(entry["enables"] for entry in user if entry)
    check("frames: the 5- and 13-byte user beacons were counted apart, none rejected",
          0 < counters.get("user_beacons", 0) <= sent and counters.get("rejected_frames") == 0,
          f"user_beacons {counters.get('user_beacons')} of {sent} sent, rejected {counters.get('rejected_frames')}")
    # Its own red flag, as a beacon message or, when it was heard before the subscription to beacon
    # messages took effect (the release binary starts fast), as the beacon of a published state.
    heard = [m["beacon"] for m in (line["msg"] for line in lines(f"{directory}/share-states.jsonl"))
             if m.get("type") in ("beacon", "state") and (m.get("beacon") or {}).get("zone") == 5]
    transmitter = (lines(f"{directory}/share-status.json") or [{}])[0].get("beacon") or {}
    check("share: a second daemon's beacon: section (hci) advertised race control's red flag on hci1, the first "
          "daemon's scanning adapter, and heard it on hci0, while the first heard hci2's frames",
          bool(heard) and all(b["mode"] == "red_flag" for b in heard) and heard[0].get("temperature") == 20
          and transmitter.get("backend") == "hci" and transmitter.get("state") == "advertising"
          and text(f"{directory}/share-beacond.rc").strip() == "0",
          f"{len(heard)} beacon messages of zone 5, transmitter {transmitter.get('state')}")
    keys = sorted({b.get("key", "") for b in status.get("beacons") or []})
    check("frames: the beacons heard are circuit beacons and the command's sender, no user beacon",
          any(k.startswith("command @ ") for k in keys) and all(k.startswith(("zone ", "command @ ")) for k in keys),
          f"{keys}")


def beacon5_group(directory):
    """beacond beacon --mode on btvirt's 5.2 hci0, heard by beacond scan on hci1."""
    log = text(f"{directory}/beacon5.log")
    check("beacon5: chose extended advertising commands on the 5.2 controller",
          "beacon transmitter on hci0: extended advertising commands" in log)
    heard = [r for r in lines(f"{directory}/beacon-scan.jsonl") if (r.get("signal") or {}).get("zone") == 9]
    check("beacon5: beacond scan heard the hand-set red flag as v1 zone 9", bool(heard) and all(
        r["signal"]["mode"] == "red_flag" and r["signal"]["version"] == 1 for r in heard), f"{len(heard)} reports")
    check("beacon5: exited 0 after SIGTERM", text(f"{directory}/beacon5.rc").strip() == "0")


def beacon_group(directory):
    """beacond beacon on hci0 following a race-control stand-in, heard by beacond run on hci1."""
    log = text(f"{directory}/beacon.log")
    frames = {"NORMAL": "010007000000000a0b", "RED_FLAG": "010007020000010a0c", "EVACUATION": "010007030000020a0c"}
    check("beacon: advertised race control's red flag at 11.5 °C as v1 zone 7 seq 1 12 °C",
          f"advertising red_flag seq 1 12°C ({frames['RED_FLAG']})" in log)
    check("beacon: chose legacy advertising commands on the 4.x controller",
          "beacon transmitter on hci0: legacy advertising commands" in log)
    published = states(directory, "legacy")
    latencies = []
    for change in lines(f"{directory}/racecontrol.jsonl")[1:]:
        mode = change["mode"].lower()
        heard = next((t for t, s in published if t >= change["t"] and s["mode"] == mode
                      and (s.get("beacon") or {}).get("zone") == 7), None)
        check(f"beacon: race control's {mode} reached the scanning daemon's socket through the air",
              heard is not None, "never" if heard is None else f"{(heard - change['t']) * 1000:.0f} ms")
        if heard is not None:
            latencies.append(heard - change["t"])
    if latencies:
        ms = sorted(x * 1000 for x in latencies)
        print(f"     latency, race control → advert → socket: min {ms[0]:.0f} ms, median {ms[len(ms) // 2]:.0f} ms, "
              f"max {ms[-1]:.0f} ms ({len(ms)} changes)")
    temperatures = {s["beacon"].get("temperature") for _, s in published
                    if (s.get("beacon") or {}).get("zone") == 7}
    check("beacon: the daemon shows the frame's temperature byte", temperatures == {11, 12}, f"{temperatures}")
    reports = {data for _, company, data in tshark_reports(f"{directory}/legacy-btmon.btsnoop", adapter=1)
               if company == "0x1234"}
    check("beacon: tshark decodes the beacon's adverts with the right fields", set(frames.values()) <= reports,
          f"{sorted(reports)}")
    check("beacon: silent once race control went stale",
          "zone 7: silent — race control's state is stale or unreachable" in log)
    enables = [b for b in btmon_blocks(f"{directory}/legacy-btmon.btsnoop")
               if "[hci0]" in b[0] and b[0].startswith("< ") and "(0x08|0x000a)" in b[0]]
    check("beacon: advertising disabled at the end", bool(enables) and "Disabled (0x00)" in enables[-1][1],
          f"{len(enables)} enable commands")
    check("beacon: exited 0 after SIGTERM", text(f"{directory}/beacon.rc").strip() == "0")


def hci_group(directory, beacond):
    log = text(f"{directory}/run-beacond.log")
    check("hci: beacond chose extended scanning on btvirt's 5.2 controller",
          "scanning on hci1: extended scan commands" in log)
    adverts = lines(f"{directory}/run-adverts.jsonl")
    latencies = check_flags("hci", directory, "run", [a for a in adverts if a["seq"] in (1, 2)])
    published = states(directory, "run")
    transitions = scanner_transitions(published)

    # hciconfig hci1 down, then up: down after the down, up after the up, then seq 3 gets through.
    went_down = step_time(directory, "run: hciconfig hci1 down")
    came_up = step_time(directory, "run: hciconfig hci1 up")
    removed = step_time(directory, "btvirt stopped")
    down = [t for t, s in transitions if s == "down" and went_down and went_down <= t < (came_up or 0)]
    up = [t for t, s in transitions if s == "up" and came_up and came_up <= t < (removed or 1e9)]
    check("hci: hciconfig hci1 down: the scanner was reported down while the adapter was down", bool(down),
          f"{down[0] - went_down:.2f} s after the down" if down else f"transitions {transitions}")
    check("hci: hciconfig hci1 up: the scanner was reported up again", bool(up),
          f"{up[0] - came_up:.2f} s after the up" if up else f"transitions {transitions}")
    after = [a for a in adverts if a["seq"] == 3]
    latencies += [x for x in (publication_latency(published, a) for a in after) if x is not None]
    for a in after:
        latency = publication_latency(published, a)
        check("hci: a new flag after hciconfig down/up was published without a restart",
              latency is not None and latency <= PUBLISH_WITHIN_S,
              "never published" if latency is None else f"{latency * 1000:.0f} ms")

    # The vhci device removed (btvirt stopped) and added again.
    reset = step_time(directory, "run: hciconfig hci1 reset")
    down = [t for t, s in transitions if s == "down" and removed and removed <= t < (reset or 1e9)]
    up = [t for t, s in transitions if s == "up" and down and down[0] < t < (reset or 1e9)]
    check("hci: vhci device removed and added again: the scanner went down, then up",
          bool(down) and bool(up), f"transitions {transitions}")
    for a in (a for a in adverts if a["seq"] == 4):
        latency = publication_latency(published, a)
        if latency is not None:
            latencies.append(latency)
        check("hci: a new flag after the vhci device came back was published without a restart",
              latency is not None and latency <= PUBLISH_WITHIN_S,
              "never published" if latency is None else f"{latency * 1000:.0f} ms")

    # hciconfig hci1 reset: the kernel closes and reopens the adapter, resetting the controller (its
    # scan off); Linux 6.1 says "down" on the unbound socket first.
    down = [t for t, s in transitions if s == "down" and reset and t >= reset]
    up = [t for t, s in transitions if s == "up" and down and t > down[0]]
    reasons = [m for m in re.findall(r"scanner down: adapter hci1 is gone \(([^)]*)\)", log)]
    check("hci: hciconfig hci1 reset: the scanner went down, then up", bool(down) and bool(up),
          f"{up[0] - reset:.2f} s after the reset; reasons seen: {sorted(set(reasons))}" if down and up
          else f"transitions {transitions}")
    for a in (a for a in adverts if a["seq"] == 5):
        latency = publication_latency(published, a)
        if latency is not None:
            latencies.append(latency)
        check("hci: a new flag after the reset was published without a restart",
              latency is not None and latency <= PUBLISH_WITHIN_S,
              "never published" if latency is None else f"{latency * 1000:.0f} ms")
    check_scan_disabled("hci", f"{directory}/run-btmon.btsnoop", "(0x08|0x0042)")
    check("hci: beacond run exited 0 after SIGTERM", text(f"{directory}/run-beacond.rc").strip() == "0")

    # beacond scan --all --json against btmon's own record, decoded by tshark.
    scanned = lines(f"{directory}/scan.jsonl")
    theirs = tshark_reports(f"{directory}/scan-btmon.btsnoop", adapter=1)
    ours = beacond_reports(scanned)
    signals = [r for r in scanned if r.get("signal", {}).get("seq") == 10]
    enables = sum(a["enables"] for a in lines(f"{directory}/scan-adverts.jsonl"))
    check("hci: beacond scan --all --json printed the advertiser's reports", len(signals) > 0 and
          text(f"{directory}/scan-beacond.rc").strip() == "0", f"{len(signals)} signals for {enables} advert enables")
    check("hci: tshark decodes the same reports from btmon's file", ours == theirs and len(ours) > 0,
          f"beacond {len(ours)}, tshark {len(theirs)}")

    # The recording of beacond run --record: tshark and beacond replay agree.
    record = f"{directory}/run-record.btsnoop"
    replayed = subprocess.run([beacond, "replay", "--all", "--json", record], capture_output=True, text=True)
    ours = beacond_reports([json.loads(line) for line in replayed.stdout.splitlines() if line.strip()])
    theirs = tshark_reports(record)
    check("hci: beacond run --record: tshark and beacond replay decode the same reports",
          replayed.returncode == 0 and ours == theirs and len(ours) > 0,
          f"replay {len(ours)} (exit {replayed.returncode}), tshark {len(theirs)}")

    # Capabilities.
    caps = [r for r in lines(f"{directory}/caps-scan.jsonl") if r.get("signal", {}).get("seq") == 20]
    check("hci: as nobody with only CAP_NET_RAW and CAP_NET_ADMIN the hci backend works",
          len(caps) > 0 and text(f"{directory}/caps-beacond.rc").strip() == "0", f"{len(caps)} signals")
    rawcap = [r for r in lines(f"{directory}/rawcap-scan.jsonl") if r.get("signal", {}).get("seq") == 21]
    check("hci: as nobody with CAP_NET_RAW alone (beacond.service's grant) the hci backend works",
          len(rawcap) > 0 and text(f"{directory}/rawcap-beacond.rc").strip() == "0", f"{len(rawcap)} signals")
    nocaps = text(f"{directory}/nocaps-beacond.log")
    check("hci: as nobody without them beacond run exits 1 and names the missing capability",
          text(f"{directory}/nocaps-beacond.rc").strip() == "1" and "CAP_NET_RAW" in nocaps,
          (re.findall(r"beacond run: .{0,80}", nocaps) or ["no message"])[0])
    beacon5_group(directory)
    return latencies


def main():
    beacond, legacy, hci = sys.argv[1:4]
    bluez = sys.argv[4] if len(sys.argv) > 4 else None
    systemd = sys.argv[5] if len(sys.argv) > 5 else None
    latencies = []
    groups = [("legacy", legacy), ("hci", hci)] + ([("bluez", bluez)] if bluez else []) + \
        ([("systemd", systemd)] if systemd else [])
    for group, directory in groups:
        rc = text(f"{directory}/guest-rc").strip()
        check(f"{group}: the guest ran its scenarios to the end", rc == "0",
              f"exit {rc}" if rc else "no result: see boot.sh's output above")
    if os.path.isdir(legacy):
        latencies += legacy_group(legacy)
        sys.dont_write_bytecode = True
        import check_adapters
        latencies += check_adapters.adapters_group(sys.modules[__name__], legacy)
    else:
        check("legacy: results present", False, legacy)
    if os.path.isdir(hci):
        latencies += hci_group(hci, beacond)
        sys.dont_write_bytecode = True
        import check_adapters
        check_adapters.filter_group(sys.modules[__name__], hci)
    else:
        check("hci: results present", False, hci)
    if bluez and os.path.isdir(bluez):
        sys.dont_write_bytecode = True  # no __pycache__ in the source tree
        import check_bluez
        check_bluez.bluez_group(sys.modules[__name__], bluez)
    if systemd and os.path.isdir(systemd):
        sys.dont_write_bytecode = True
        import check_systemd
        check_systemd.systemd_group(sys.modules[__name__], systemd)
    if latencies:
        ms = sorted(x * 1000 for x in latencies)
        print(f"     latency, first advert of a new flag → published on the socket: "
              f"min {ms[0]:.0f} ms, median {ms[len(ms) // 2]:.0f} ms, max {ms[-1]:.0f} ms ({len(ms)} flags)")
    print(f"test-stack: {results['passed']} passed, {results['failed']} failed")
    sys.exit(1 if results["failed"] else 0)


if __name__ == "__main__":
    main()
