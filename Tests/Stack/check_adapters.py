"""Host-side checks of several adapters in one daemon (issue 32; the end of
Tests/Stack/guest-hci-legacy.sh: btvirt's three LE-only controllers), run by check.py, which
passes itself as `c`.

multi: the daemon scans hci1 and hci2 while hci0 advertises; hci1 is brought down in the middle of
a red flag and up again. auto: a daemon with `--adapter auto` starts before any adapter exists,
finds btvirt's three controllers, and finds them again after the vhci device is removed and added.
filter (the hci boot): the kernel filter on a real raw HCI socket.
"""
import json


def step_time(c, directory, text_in_step):
    """The guest's uptime at the first step whose text contains text_in_step; None if none."""
    return c.step_time(directory, text_in_step)


def adapters(state):
    return [(a["name"], a["state"]) for a in state["scanner"].get("adapters", [])]


def flag_publications(published, mode, seq):
    """The states that newly published the flag: MODE from the beacon with SEQ, after another."""
    firsts, showing = [], False
    for t, state in published:
        beacon = state.get("beacon") or {}
        now = state["mode"] == mode and beacon.get("seq") == seq
        if now and not showing:
            firsts.append((t, state["seq"]))
        showing = now
    return firsts


def latency_check(c, group, published, advert):
    latency = c.publication_latency(published, advert)
    c.check(f"{group}: {advert['mode']} seq {advert['seq']} published within {c.PUBLISH_WITHIN_S:g} s",
            latency is not None and latency <= c.PUBLISH_WITHIN_S,
            "never published" if latency is None else f"{latency * 1000:.0f} ms")
    return [latency] if latency is not None else []


def multi_group(c, directory):
    published = c.states(directory, "multi")
    adverts = c.lines(f"{directory}/multi-adverts.jsonl")
    latencies = []
    for advert in adverts:
        latencies += latency_check(c, "multi", published, advert)
        firsts = flag_publications(published, advert["mode"], advert["seq"])
        c.check("multi: the flag heard on hci1 and hci2 was published once (one seq for the change)",
                len(firsts) == 1, f"published as seq {[s for _, s in firsts]}")
        # The TTL is 4 s and the adverts ran 12 s, hci1 down after 4: without hci2 the flag lapses
        # before the adverts end. Every state from the flag's publication to the adverts' end shows it.
        if firsts:
            during = [(t, s) for t, s in published if firsts[0][0] <= t <= advert["end"]]
            others = [s["mode"] for _, s in during if s["mode"] != advert["mode"]]
            lapsed = next((t for t, s in published if t > firsts[0][0] and s["mode"] != advert["mode"]), None)
            c.check("multi: hciconfig hci1 down: the flag stayed published through hci2 until its adverts ended",
                    not others and (lapsed is None or lapsed >= advert["end"]),
                    f"{len(during)} states, other modes {others}; lapsed "
                    + (f"{lapsed - advert['end']:+.2f} s after the adverts' end" if lapsed else "never"))
    went_down = step_time(c, directory, "multi: hciconfig hci1 down")
    degraded = [(t, s) for t, s in published if went_down and t >= went_down and s["scanner"]["state"] == "degraded"]
    c.check("multi: hciconfig hci1 down: the scanner was published degraded, hci1 recovering, hci2 up",
            bool(degraded) and adapters(degraded[0][1]) == [("hci1", "recovering"), ("hci2", "up")],
            f"{degraded[0][0] - went_down:.2f} s after the down, {adapters(degraded[0][1])}" if degraded
            else f"states {[s['scanner'] for _, s in published][-4:]}")
    came_up = step_time(c, directory, "ok: multi: scanner up again")
    up = [s for t, s in published if degraded and t > degraded[0][0] and s["scanner"]["state"] == "up"]
    c.check("multi: hci1 up again: the scanner was published up, both adapters up",
            bool(up) and adapters(up[0]) == [("hci1", "up"), ("hci2", "up")] and came_up is not None,
            f"{adapters(up[0])}" if up else "never up again")
    status = (c.lines(f"{directory}/multi-status.json") or [{}])[0]
    listed = status.get("scanner", {}).get("adapters", [])
    copies = (status.get("scan") or {}).get("copies") or {}
    signals = status.get("counters", {}).get("signals")
    c.check("multi: status: each adapter delivered reports, and the copies heard on both were counted once",
            [a["name"] for a in listed] == ["hci1", "hci2"] and all(a.get("reports", 0) > 0 for a in listed)
            and copies.get("dropped", 0) > 0 and signals == copies.get("passed"),
            f"reports {[a.get('reports') for a in listed]}, copies {copies}, engine signals {signals}")
    c.check("multi: beacond run exited 0 after SIGTERM", c.text(f"{directory}/multi-beacond.rc").strip() == "0")
    return latencies


def auto_group(c, directory):
    published = c.states(directory, "auto")
    log = c.text(f"{directory}/auto-beacond.log")
    first = published[0][1] if published else None
    c.check("auto: with no adapter yet the scanner was published down, and the log says why",
            first is not None and first["scanner"]["state"] == "down" and adapters(first) == []
            and "no Bluetooth adapter found yet" in log,
            f"first scanner {first['scanner'] if first else None}")
    up = [s for _, s in published if s["scanner"]["state"] == "up"]
    names = sorted(name for name, _ in adapters(up[0])) if up else []
    c.check("auto: btvirt's controllers, added after the start, were found and all scanned",
            names == ["hci0", "hci1", "hci2"] and all(state == "up" for _, state in adapters(up[0])),
            f"first up: {adapters(up[0])}" if up else "never up")
    adverts = c.lines(f"{directory}/auto-adverts.jsonl")
    latencies = []
    for advert in adverts:
        latencies += latency_check(c, "auto", published, advert)
    removed = step_time(c, directory, "ok: auto: scanner up on the adapters found")
    down = [t for t, s in published if removed and t > removed and s["scanner"]["state"] == "down"]
    again = [s for t, s in published if down and t > down[0] and s["scanner"]["state"] == "up"]
    c.check("auto: vhci device removed and added back: the scanner went down, then up on every adapter",
            bool(down) and bool(again) and sorted(n for n, _ in adapters(again[0])) == ["hci0", "hci1", "hci2"],
            f"down {len(down)} states, then {adapters(again[0]) if again else 'never up'}")
    c.check("auto: beacond run exited 0 after SIGTERM", c.text(f"{directory}/auto-beacond.rc").strip() == "0")
    return latencies


def adapters_group(c, directory):
    return multi_group(c, directory) + auto_group(c, directory)


def filter_group(c, directory):
    """The kernel filter on the real raw HCI socket (the hci boot: extended scanning, so reports
    of legacy adverts arrive as LE Extended Advertising Reports). hci0 advertised an iBeacon for
    3 s, a red flag for 2 s, the iBeacon again; the daemon scanned hci1."""
    phone_mac = None
    heard = c.tshark_reports(f"{directory}/filter-btmon.btsnoop", adapter=1)
    phone = [r for r in heard if len(r) > 1 and "0x004c" in r[1]]
    if phone:
        phone_mac = phone[0][0].lower()
    c.check("filter: the controller delivered the iBeacon's reports to the kernel on hci1 (btmon)",
            len(phone) > 0, f"{len(phone)} reports")

    def load(name):
        try:
            return json.loads(c.text(f"{directory}/{name}"))
        except ValueError:
            return {}
    first, look, second = load("filter-status.json"), load("filter-devices1.json"), load("filter-devices2.json")
    hci = first.get("hci") or {}
    kernel_filter = hci.get("kernel_filter") or {}
    c.check("filter: the kernel dropped them: beacond read no report while only the iBeacon advertised",
            kernel_filter.get("state") == "on" and hci.get("reports") == 0,
            f"kernel_filter {kernel_filter}, reports {hci.get('reports')}")
    listed = [d["addr"].lower() for d in look.get("devices") or []]
    counters = look.get("devices_counters") or {}
    c.check("filter: the first look finds no other device (the iBeacon was never read) and says "
            "it has listened for 0 s", (look.get("hci") or {}).get("reports", 0) > 0 and listed == []
            and counters.get("listening_s") == 0, f"devices {listed}, counters {counters}")
    later = second.get("devices") or []
    lifted = (second.get("hci") or {}).get("kernel_filter") or {}
    c.check("filter: the look lifted it: the iBeacon advertising again is listed, with its reports",
            phone_mac is not None and any(d["addr"].lower() == phone_mac and d["reports"] > 0 for d in later)
            and lifted.get("state") == "lifted" and lifted.get("lifts") == 1,
            f"devices {[(d['addr'], d['reports']) for d in later]}, kernel_filter {lifted}, "
            f"iBeacon {phone_mac}")
    c.check("filter: beacond exits 0 on SIGTERM", c.text(f"{directory}/filter-beacond.rc").strip() == "0")
