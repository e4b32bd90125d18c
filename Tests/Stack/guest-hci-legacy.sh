#!/bin/bash
# Boot "legacy": btvirt's LE-only controllers (-L, Bluetooth 4.x: no extended scanning). beacond run
# publishes each flag; then `beacond beacon` on hci0 follows a race control stand-in and the daemon
# hears it on hci1; SIGTERM disables the scan. Checked on the host by check.py (group legacy).
source "$(dirname "$0")/guest-lib.sh"
start_controllers -L -l2 || exit 1
daemon_start legacy --backend hci || exit 1
advertise legacy safety_car:1:10:3 red_flag:2:10:3 evacuation:3:10:3 || exit 1

# The transmitter: race control says normal at 11.3 °C, then red flag at 11.5 °C, then evacuation;
# then it goes away, and 3 s later (--stale-after) the beacon falls silent. btvirt's controllers
# send one report per advertising enable, so each change is heard once.
rc_state=/tmp/racecontrol.json
set_race_control() {
	step "race control: $1 $2"
	python3 "$stack/racecontrol.py" set "$rc_state" "$results/racecontrol.jsonl" "$1" "$2"
}
set_race_control NORMAL "11.3°C"
python3 "$stack/racecontrol.py" serve 8080 "$rc_state" 2>>"$results/racecontrol.log" &
rc_pid=$!
"$beacond" beacon --adapter hci0 --zone 7 --remote-url http://127.0.0.1:8080/api/state --stale-after 3 \
	--state-dir /tmp/beacon-state >"$results/beacon.log" 2>&1 &
beacon_pid=$!
wait_for "beacon: normal heard" 30 last_mode_is normal "$results/legacy-states.jsonl"
set_race_control RED_FLAG "11.5°C"
wait_for "beacon: red flag heard" 30 last_mode_is red_flag "$results/legacy-states.jsonl"
set_race_control EVACUATION "11.5°C"
wait_for "beacon: evacuation heard" 30 last_mode_is evacuation "$results/legacy-states.jsonl"
step "race control: stopped"
kill "$rc_pid"
wait "$rc_pid" 2>/dev/null
wait_for "beacon: silent after race control went stale" 20 \
	grep -q "zone 7: silent — race control's state is stale" "$results/beacon.log"
step "beacon: SIGTERM"
kill -TERM "$beacon_pid"
wait_for "beacon: ended" 10 sh -c "! kill -0 $beacon_pid"
wait "$beacon_pid"
echo "$?" >"$results/beacon.rc"
daemon_stop legacy
exit 0
