"""Host-side checks of the legacy boot's signed-frame scenario (guest-hci-legacy.sh, "Signed frames"):
`beacond beacon --frame-version v3` on hci0, `beacond run --key-file` on hci1, an attacker on hci2.
Imported by check.py, which passes itself for its helpers."""


def signed_group(checks, directory):
    check, lines, text, states = checks.check, checks.lines, checks.text, checks.states
    log = text(f"{directory}/signed-beacon.log")
    check("signed: the transmitter sent signed v3 frames for zone 7", "red_flag seq 0 (03" in log)
    published = states(directory, "signed")
    first = next((i for i, (_, s) in enumerate(published)
                  if s["mode"] == "red_flag" and (s.get("beacon") or {}).get("signed")), None)
    beacon = (published[first][1].get("beacon") or {}) if first is not None else {}
    check("signed: beacond run with the key file published the red flag as signed, zone 7",
          first is not None and beacon.get("zone") == 7 and beacon.get("kind") == "circuit",
          "never" if first is None else f"key {beacon.get('key')}")
    attack = lines(f"{directory}/signed-attack-adverts.jsonl")
    later = [s for _, s in published[first:]] if first is not None else []
    check("signed: the forged, the replayed and the unsigned frame (from the beacon's address) changed nothing: "
          "every state after the first is the signed red flag of zone 7",
          len(attack) == 3 and bool(later) and all(
              s["mode"] == "red_flag" and s.get("zone") == 7 and (s.get("beacon") or {}).get("signed")
              for s in later),
          f"{len(attack)} attack steps, states after the first: {[(s['mode'], s.get('zone')) for s in later[1:]]}")
    status = (lines(f"{directory}/signed-status.json") or [{}])[0]
    signed = status.get("signed") or {}
    rejected = signed.get("rejected") or {}
    below = (status.get("counters") or {}).get("below_signed", 0)
    check("signed: each attack frame was counted under its reason: bad_tag, replayed, below_signed",
          rejected.get("bad_tag", 0) > 0 and rejected.get("replayed", 0) > 0 and below > 0
          and rejected.get("unknown_key", 0) == 0 and rejected.get("expired", 0) == 0,
          f"rejected {rejected}, below_signed {below}")
    check("signed: repeats of the beacon's bytes cost no HMAC (tags reused)",
          signed.get("tags_reused", 0) > 0 and signed.get("tags_computed", 0) > 0,
          f"computed {signed.get('tags_computed')}, reused {signed.get('tags_reused')}")
    senders = signed.get("senders") or []
    check("signed: the sender is circuit 7 zone 7 with its clock offset shown",
          len(senders) == 1 and senders[0].get("source") == "circuit 7 zone 7"
          and senders[0].get("clock_offset_s") is not None, f"{senders}")
    daemon_log = text(f"{directory}/signed-beacond.log")
    check("signed: the forged frame was logged as forged", "forged frame: zone 7 @ " in daemon_log
          and "bad tag (key id 1)" in daemon_log)
    marks = [line.split() for line in text(f"{directory}/signed-marks").splitlines() if not line.startswith("#")]
    mark = senders[0] if senders else {}
    # The beacon still signs while the daemon stops: the mark saved is the status's or a later one.
    check("signed: the daemon exited 0 and kept the sender's order mark in its state directory",
          text(f"{directory}/signed-beacond.rc").strip() == "0" and len(marks) == 1
          and marks[0][:3] == ["circuit", "7", "7"] and int(marks[0][3]) >= mark.get("signed_at", 1 << 40),
          f"{marks}")
    check("signed: the transmitter exited 0 after SIGTERM", text(f"{directory}/signed-beacon.rc").strip() == "0")
