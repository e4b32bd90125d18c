#!/bin/bash
# Boot "legacy": btvirt's LE-only controllers (-L, Bluetooth 4.x: no extended scanning). beacond run
# publishes each flag; then `beacond beacon` on hci0 follows a race control stand-in and the daemon
# hears it on hci1; then a staff app's command frames and an attendee's user beacons come from hci2;
# SIGTERM disables the scan; then signed v3 frames and an attacker on hci2; then a daemon on hci1 and
# hci2 at once, and one on every adapter (auto). Checked on the host by check.py (groups legacy,
# beacon, frames, share), check_signed.py (group signed) and check_adapters.py (multi, auto).
source "$(dirname "$0")/guest-lib.sh"
start_controllers -L -l3 || exit 1
daemon_start legacy --backend hci || exit 1
advertise legacy safety_car:1:10:3 red_flag:2:10:3 evacuation:3:10:3 || exit 1

# The transmitter: race control says normal at 11.3 °C, then red flag at 11.5 °C, then evacuation;
# then it goes away, and 3 s later (--stale-after) the beacon falls silent. btvirt's controllers
# send one report per advertising enable, so each change is heard once.
set_race_control NORMAL "11.3°C"
race_control_start
"$beacond" beacon --adapter hci0 --zone 7 --remote-url http://127.0.0.1:8080/api/state --stale-after 3 \
	--state-dir /tmp/beacon-state >"$results/beacon.log" 2>&1 &
beacon_pid=$!
wait_for "beacon: normal heard" 30 last_mode_is normal "$results/legacy-states.jsonl"
set_race_control RED_FLAG "11.5°C"
wait_for "beacon: red flag heard" 30 last_mode_is red_flag "$results/legacy-states.jsonl"
set_race_control EVACUATION "11.5°C"
wait_for "beacon: evacuation heard" 30 last_mode_is evacuation "$results/legacy-states.jsonl"
race_control_stop
wait_for "beacon: silent after race control went stale" 20 \
	grep -q "zone 7: silent — race control's state is stale" "$results/beacon.log"
step "beacon: SIGTERM"
kill -TERM "$beacon_pid"
wait_for "beacon: ended" 10 sh -c "! kill -0 $beacon_pid"
wait "$beacon_pid"
echo "$?" >"$results/beacon.rc"

# The staff app's command frames and the attendee app's user beacons (5 and 13 bytes) from hci2,
# once zone 7's last claim has expired: evacuate is fused circuit-wide, keyed by its sender, and
# normal clears it long before its 30 s; the user beacons are counted and never fused.
# Meanwhile a second daemon's beacon: section (hci backend) advertises race control's red flag for
# zone 5 on hci1, the adapter the first daemon scans, and the second daemon hears it on hci0.
wait_for "legacy: zone 7's claim expired" 20 last_mode_is unknown "$results/legacy-states.jsonl"
adapter_up hci2 || exit 1
echo '{"global_mode": "RED_FLAG", "temperature": "20°C"}' >/tmp/share-rc.json
printf 'beacon:\n  zone: 5\n  backend: hci\n  adapter: hci1\n' >/tmp/share.yaml
mkdir -p /tmp/share-state
"$beacond" run --adapter hci0 --socket /tmp/share.sock --state-dir /tmp/share-state --config /tmp/share.yaml \
	--remote-url file:///tmp/share-rc.json --log-level debug >"$results/share-beacond.log" 2>&1 &
share_pid=$!
python3 "$stack/subscribe.py" /tmp/share.sock "$results/share-states.jsonl" --wait 60 --beacons \
	2>>"$results/share-subscribe.log" &
wait_for "share: scanner up" 60 scanner_state_count 1 up "$results/share-states.jsonl" || exit 1
advertiser=hci2 advertise legacy-frames hex:0112345678:1 hex:01a1b2c3d4422a8f5c3fa1cac1:1 hex:ff01:2 \
	hex:ff00:2 || exit 1
wait_for "legacy: the command's claim cleared" 10 last_mode_is unknown "$results/legacy-states.jsonl"
wait_for "share: zone 5 from hci1 heard on hci0" 10 grep -q '"zone": 5, .*"mode": "red_flag"' \
	"$results/share-states.jsonl"
"$beacond" status --socket /tmp/share.sock --json >"$results/share-status.json" 2>>"$results/share-status.err"
stop_pid "$share_pid" 20
echo "$?" >"$results/share-beacond.rc"
"$beacond" status --socket /tmp/legacy.sock --json >"$results/legacy-status.json" 2>>"$results/legacy-status.err"
daemon_stop legacy

# Signed frames: `beacond beacon` on hci0 sends zone 7's red flag as signed v3 frames, signed again
# every 5 s; a daemon with the key file publishes it as signed on hci1. Then hci2, from the beacon's
# own address, sends what a spoofer would: the first genuine frame with a wrong tag, that genuine
# frame again after the beacon signed newer ones, and an unsigned v1 normal for zone 7. None may
# change what is published; each is counted under its reason. The window is wide (120 s) so that a
# slow guest's replay is turned away as `replayed`, which is what it is, not as `clock_window`.
(umask 077 && "$beacond" keys new --id 1 >/tmp/venue.keys) || exit 1
subscribe_flags=--beacons daemon_start signed --backend hci --key-file /tmp/venue.keys --clock-window 120 || exit 1
"$beacond" beacon --adapter hci0 --zone 7 --mode red_flag --frame-version v3 --key-file /tmp/venue.keys \
	--state-dir /tmp/signed-beacon-state >"$results/signed-beacon.log" 2>&1 &
signed_beacon_pid=$!
wait_for "signed: the red flag published as signed" 40 \
	grep -q '"mode": "red_flag".*"signed": true' "$results/signed-states.jsonl" || exit 1
recorded=$(grep -o '(03[0-9a-f]\{46\})' "$results/signed-beacon.log" | head -1 | tr -d '()')
step "signed: recorded $recorded"
# signed_mark_above T: the daemon accepted a frame of the beacon signed after T.
signed_mark_above() {
	"$beacond" status --socket /tmp/signed.sock --json | python3 -c '
import json, sys
senders = json.load(sys.stdin)["signed"]["senders"]
sys.exit(0 if any(s["signed_at"] > int(sys.argv[1], 16) for s in senders) else 1)' "${recorded:20:8}"
}
wait_for "signed: the beacon signed again and the daemon took it" 30 signed_mark_above || exit 1
forged=${recorded:0:46}$(printf '%02x' $((0x${recorded:46:2} ^ 0xff)))
beacon_address=$(hciconfig hci0 | grep -o 'BD Address: [0-9A-F:]*' | cut -d' ' -f3)
advertiser=hci2 advertise signed-attack --random-address "$beacon_address" "hex:$forged:2" "hex:$recorded:2" \
	hex:0100070000ffff0a:2 || exit 1
# signed_counted: each of the three was heard and counted under its reason.
signed_counted() {
	"$beacond" status --socket /tmp/signed.sock --json | python3 -c '
import json, sys
status = json.load(sys.stdin)
rejected = status["signed"]["rejected"]
sys.exit(0 if rejected["bad_tag"] and rejected["replayed"] and status["counters"]["below_signed"] else 1)'
}
wait_for "signed: the forged, the replayed and the unsigned frame counted" 20 signed_counted
"$beacond" status --socket /tmp/signed.sock --json >"$results/signed-status.json" 2>>"$results/signed-status.err"
daemon_stop signed
cp /tmp/signed-state/signed-marks "$results/signed-marks" 2>/dev/null
stop_pid "$signed_beacon_pid" 20
echo "$?" >"$results/signed-beacon.rc"

# Several adapters (issue 32): hci0 advertises, the daemon scans hci1 and hci2. A red flag heard by
# both is published once; hciconfig hci1 down in the middle of it leaves its refreshes flowing
# through hci2 (TTL 4 s, advertised for 12 s: without hci2 the flag would lapse), the scanner
# degraded; hci1 up again, up again.
daemon_start multi --backend hci --adapter hci2 || exit 1
advertise multi red_flag:6:4:12 &
advertise_pid=$!
sleep 4
step "multi: hciconfig hci1 down"
ups=$(scanner_changes up "$results/multi-states.jsonl")
hciconfig hci1 down
wait_for "multi: scanner degraded" 20 last_scanner_is degraded "$results/multi-states.jsonl"
wait "$advertise_pid"
"$beacond" status --socket /tmp/multi.sock --json >"$results/multi-status.json" 2>>"$results/multi-status.err"
adapter_up hci1
wait_for "multi: scanner up again" 30 scanner_state_count $((ups + 1)) up "$results/multi-states.jsonl"
daemon_stop multi

# scanner.adapter: auto, started with no adapter at all: the daemon finds btvirt's controllers when
# they appear, and finds them again after the vhci device is removed and added back.
stop_controllers
daemon_adapters="--adapter auto" daemon_launch auto --backend hci
wait_for "auto: scanner down, no adapter yet" 30 scanner_state_count 1 down "$results/auto-states.jsonl"
start_controllers -L -l3 || exit 1
wait_for "auto: scanner up on the adapters found" 60 scanner_state_count 1 up "$results/auto-states.jsonl"
advertise auto evacuation:7:4:3
downs=$(scanner_changes down "$results/auto-states.jsonl")
ups=$(scanner_changes up "$results/auto-states.jsonl")
stop_controllers
wait_for "auto: scanner down (vhci removed)" 20 scanner_state_count $((downs + 1)) down "$results/auto-states.jsonl"
start_controllers -L -l3 || exit 1
wait_for "auto: scanner up again (vhci added)" 60 scanner_state_count $((ups + 1)) up "$results/auto-states.jsonl"
advertise auto red_flag:8:4:3
daemon_stop auto
exit 0
