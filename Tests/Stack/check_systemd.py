"""Host-side checks of the systemd boot (guest-systemd.sh): Debian's systemd as PID 1 runs the
package as shipped. The guest writes one verdict per check it can only judge there (unit states,
processes, the journal, files after purge) to verdicts.log; the flag's latency is timed here from
the advert and subscriber logs. Imported by check.py, which passes itself for its helpers."""
import re


def exposure(text):
    match = re.search(r"Overall exposure level for \S+: ([0-9.]+)", text)
    return float(match.group(1)) if match else None


def systemd_group(checks, directory):
    check, lines, text, states = checks.check, checks.lines, checks.text, checks.states
    verdicts = [line.split("\t") for line in text(f"{directory}/verdicts.log").splitlines() if line.strip()]
    check("systemd: the guest wrote its verdicts", bool(verdicts), f"{len(verdicts)} verdicts")
    for verdict in verdicts:
        outcome, name, detail = (verdict + ["", "", ""])[:3]
        check(f"systemd: {name}", outcome == "ok", detail.strip())

    adverts = lines(f"{directory}/systemd-adverts.jsonl")
    published = states(directory, "systemd")
    latency = checks.publication_latency(published, adverts[0]) if adverts else None
    check(f"systemd: the red flag from hci0 reached a beacond-group client within {checks.PUBLISH_WITHIN_S:g} s",
          latency is not None and latency <= checks.PUBLISH_WITHIN_S,
          "never published" if latency is None else f"{latency * 1000:.0f} ms")

    online = exposure(text(f"{directory}/security-online.txt"))
    offline = exposure(text(f"{directory}/security-offline.txt"))
    check("systemd: systemd-analyze security beacond.service on the running system: 1.6 or lower",
          online is not None and online <= 1.6, f"online {online}, offline {offline}")
