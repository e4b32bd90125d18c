"""Host-side checks of the D-Bus backend's boot (Tests/Stack/guest-bluez.sh), run by check.py,
which passes itself as `c` (its check, lines, states, text, publication_latency, btmon_blocks,
tshark_reports).

Twice, against a real bluetoothd 5.66: with its defaults (no Advertisement Monitor interface) and
with -E (beacond registers its monitor). btvirt ignores the controller's duplicate filter, so the
flag is kept in both runs here; the btmon trace shows what a real controller would do with it:
without a monitor, beacond restarts discovery every scanner.bluez_refresh_s (4 s), so a real
controller repeats an unchanged advert at least that often, well inside a beacon's TTL.
"""
import re

LAPSE_WITHIN_S = 3.0  # after the TTL
REFRESH_S = 4  # scanner.bluez_refresh_s's default: beacond restarts discovery this often without a monitor
REFRESH_SLACK_S = 2.0  # the scan thread's D-Bus round trips under TCG


def scan_enables(c, path):
    """(time, enabled, duplicate filter) of every LE Set (Extended) Scan Enable on hci1."""
    enables = []
    for header, body in c.btmon_blocks(path):
        if header.startswith("< ") and "[hci1]" in header and re.search(r"\(0x08\|0x00(0c|42)\)", header):
            time = float(header.split()[-1])
            enables.append((time, "Enabled (0x01)" in body.split("Filter")[0], "duplicates: Enabled" in body))
    return enables


def variant(c, directory, name, monitor):
    log = c.text(f"{directory}/{name}-beacond.log")
    if monitor:
        c.check(f"{name}: bluetoothd -E: beacond's advertisement monitor registered and activated",
                "registered on hci1: repeated advertisements are reported" in log
                and "BlueZ activated the advertisement monitor on hci1" in log)
    else:
        c.check(f"{name}: bluetoothd's defaults: no Advertisement Monitor manager, said once",
                log.count("BlueZ offers no advertisement monitor manager") == 1)
    published = c.states(directory, name)
    for advert in c.lines(f"{directory}/{name}-adverts.jsonl"):
        latency = c.publication_latency(published, advert)
        c.check(f"{name}: {advert['mode']} seq {advert['seq']} published within {c.PUBLISH_WITHIN_S:g} s",
                latency is not None and latency <= c.PUBLISH_WITHIN_S,
                "never published" if latency is None else f"{latency * 1000:.0f} ms")
        if latency is None:
            continue
        shown = advert["t"] + latency
        during = [s for t, s in published if shown <= t <= advert["end"]]
        c.check(f"{name}: kept while the advert repeated for {advert['end'] - advert['t']:.0f} s "
                f"(TTL {advert['ttl']} s)", all(s["mode"] == advert["mode"] for s in during),
                f"modes published meanwhile: {[s['mode'] for s in during]}")
        lapsed = next((t for t, s in published if t > advert["end"] and s["mode"] != advert["mode"]), None)
        c.check(f"{name}: lapsed after the repeats stopped, within the TTL + {LAPSE_WITHIN_S:g} s",
                lapsed is not None and lapsed - advert["end"] <= advert["ttl"] + LAPSE_WITHIN_S,
                "never" if lapsed is None else f"{lapsed - advert['end']:.1f} s after the last advert")
    enables = [e for e in scan_enables(c, f"{directory}/{name}-btmon.btsnoop") if e[1]]
    starts = ", ".join(f"{t:.1f} s (dup {'on' if dup else 'off'})" for t, _, dup in enables)
    if monitor:
        c.check(f"{name}: with the monitor active, bluetoothd scans with the duplicate filter off",
                len(enables) > 1 and not any(dup for _, _, dup in enables[1:]), f"scan enables at {starts}")
        c.check(f"{name}: with the monitor active, beacond does not restart discovery",
                "(scanner.bluez_refresh_s)" not in log)
    else:
        c.check(f"{name}: without a monitor, every scan start asks the controller to filter duplicates",
                bool(enables) and all(dup for _, _, dup in enables), f"scan enables at {starts}")
        c.check(f"{name}: without a monitor, beacond says once that it restarts discovery every {REFRESH_S} s",
                log.count(f"restarting discovery on hci1 every {REFRESH_S} s (scanner.bluez_refresh_s)") == 1)
        gaps = [later - earlier for (earlier, _, _), (later, _, _) in zip(enables, enables[1:])]
        c.check(f"{name}: scan enables follow each other at beacond's {REFRESH_S} s period, not bluetoothd's 10 s",
                len(gaps) >= 3 and max(gaps) <= REFRESH_S + REFRESH_SLACK_S,
                "gaps " + ", ".join(f"{gap:.1f} s" for gap in gaps))
    c.check(f"{name}: beacond run exited 0 after SIGTERM", c.text(f"{directory}/{name}-beacond.rc").strip() == "0")


def first_heard(entries, since, match):
    """The time of the first stamped entry at or after `since` that `match` accepts."""
    return next((e["t"] for e in entries if e["t"] >= since and match(e["msg"])), None)


def latency_line(label, latencies):
    if latencies:
        ms = sorted(x * 1000 for x in latencies)
        print(f"     latency, {label}: min {ms[0]:.0f} ms, median {ms[len(ms) // 2]:.0f} ms, max {ms[-1]:.0f} ms "
              f"({len(ms)} changes)")


def beacon_group(c, directory):
    """The transmitter through bluetoothd: beacond beacon on hci0 (zone 7), beacond run's beacon:
    section on hci1 (zone 8, the adapter it scans), beacond scan on hci2."""
    log = c.text(f"{directory}/beacon-bluez.log")
    daemon_log = c.text(f"{directory}/bluez-beacon-beacond.log")
    c.check("bluez-beacon: beacond beacon --backend bluez advertised through bluetoothd on hci0",
            "beacon transmitter on hci0: advertising through bluetoothd" in log)
    c.check("bluez-beacon: beacond run's beacon: section advertised through bluetoothd on hci1",
            "beacon transmitter on hci1: advertising through bluetoothd" in daemon_log)
    frames = {"NORMAL": "010007000000000a0b", "RED_FLAG": "010007020000010a0c", "EVACUATION": "010007030000020a0c"}
    c.check("bluez-beacon: advertised race control's red flag at 11.5 °C as v1 zone 7 seq 1 12 °C",
            f"advertising red_flag seq 1 12°C ({frames['RED_FLAG']})" in log)
    scanned = c.lines(f"{directory}/bluez-scan.jsonl")
    published = c.lines(f"{directory}/bluez-beacon-states.jsonl")
    over_air, to_socket = [], []
    # The first state is set before anything starts: its latency includes the start-up.
    for index, change in enumerate(c.lines(f"{directory}/racecontrol.jsonl")):
        mode = change["mode"].lower()
        for zone in (7, 8):
            heard = first_heard(scanned, change["t"], lambda m: (m.get("signal") or {}).get("zone") == zone
                                and m["signal"].get("mode") == mode)
            c.check(f"bluez-beacon: race control's {mode} heard from zone {zone} on hci2",
                    heard is not None, "never" if heard is None else f"{(heard - change['t']) * 1000:.0f} ms")
            if heard is not None and index > 0:
                over_air.append(heard - change["t"])
        shown = first_heard(published, change["t"], lambda m: m.get("type") == "beacon"
                            and m["beacon"].get("zone") == 7 and m["beacon"].get("mode") == mode)
        c.check(f"bluez-beacon: the daemon scanning hci1 while advertising on it heard zone 7's {mode}",
                shown is not None, "never" if shown is None else f"{(shown - change['t']) * 1000:.0f} ms")
        if shown is not None and index > 0:
            to_socket.append(shown - change["t"])
    latency_line("race control → bluetoothd advert → beacond scan (hci2)", over_air)
    latency_line("race control → bluetoothd advert → socket (hci1, sharing the adapter)", to_socket)
    reports = {data for _, company, data in c.tshark_reports(f"{directory}/bluez-beacon-btmon.btsnoop", adapter=1)
               if company == "0x1234"}
    c.check("bluez-beacon: tshark decodes zone 7's adverts on hci1 with the right fields",
            set(frames.values()) <= reports, f"{sorted(reports)}")
    c.check("bluez-beacon: beacond beacon silent once race control went stale",
            "zone 7: silent — race control's state is stale or unreachable" in log)
    status = (c.lines(f"{directory}/bluez-beacon-status.json") or [{}])[0].get("beacon") or {}
    c.check("bluez-beacon: the daemon's transmitter silent once race control went stale, and says why",
            status.get("backend") == "bluez" and status.get("zone") == 8 and status.get("state") == "silent"
            and "stale" in (status.get("detail") or ""), f"{status}")
    removed = [h for h, _ in c.btmon_blocks(f"{directory}/bluez-beacon-btmon.btsnoop")
               if h.startswith("@ ") and "Remove Advertising" in h]
    c.check("bluez-beacon: bluetoothd removed the advertisement at each change and when silent", len(removed) >= 4,
            f"{len(removed)} MGMT Remove Advertising commands")
    c.check("bluez-beacon: beacond beacon exited 0 after SIGTERM", c.text(f"{directory}/beacon-bluez.rc").strip() == "0")
    c.check("bluez-beacon: beacond run exited 0 after SIGTERM",
            c.text(f"{directory}/bluez-beacon-beacond.rc").strip() == "0")


def bluez_group(c, directory):
    variant(c, directory, "bluez-default", monitor=False)
    variant(c, directory, "bluez-experimental", monitor=True)
    beacon_group(c, directory)
