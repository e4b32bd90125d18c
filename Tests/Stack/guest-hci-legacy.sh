#!/bin/bash
# Boot "legacy": btvirt's LE-only controllers (-L, Bluetooth 4.x: no extended scanning). beacond run
# publishes each flag; then `beacond beacon` on hci0 follows a race control stand-in and the daemon
# hears it on hci1; then a staff app's command frames and an attendee's user beacons come from hci2;
# SIGTERM disables the scan. Checked on the host by check.py (group legacy).
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
exit 0
