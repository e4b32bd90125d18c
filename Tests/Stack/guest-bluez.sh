#!/bin/bash
# Boot "bluez": the D-Bus backend against a real dbus-daemon --system and bluetoothd (5.66 here),
# twice: with bluetoothd's defaults (no Advertisement Monitor interface) and with experimental
# features (-E: beacond registers its monitor). Each time hci0 repeats a red flag (TTL 4 s) every
# 250 ms for 20 s; beacond run --backend bluez must publish it and keep it until the repeats stop.
# Then the transmitter through bluetoothd (see "bluez-beacon" below). Checked on the host by
# check_bluez.py.
source "$(dirname "$0")/guest-lib.sh"
start_controllers -l3 || exit 1
adapter_up hci2 || exit 1
mkdir -p /run/dbus
dbus-daemon --system --fork --nopidfile >>"$results/dbus.log" 2>&1
wait_for "system bus up" 20 test -S /run/dbus/system_bus_socket || exit 1

seq=30
for variant in default experimental; do
	flags=
	[ "$variant" = experimental ] && flags=-E
	step "bluez-$variant: bluetoothd $flags"
	/usr/libexec/bluetooth/bluetoothd -n -d $flags >"$results/bluez-$variant-bluetoothd.log" 2>&1 &
	bluetoothd_pid=$!
	wait_for "bluez-$variant: bluetoothd has hci1 on the bus" 30 \
		dbus-send --system --print-reply --dest=org.bluez /org/bluez/hci1 org.freedesktop.DBus.Properties.Get \
		string:org.bluez.Adapter1 string:Powered || exit 1
	daemon_start "bluez-$variant" --backend bluez || exit 1
	advertise "bluez-$variant" "red_flag:$seq:4:20" || exit 1
	wait_for "bluez-$variant: the flag expired" 20 last_mode_is unknown "$results/bluez-$variant-states.jsonl"
	daemon_stop "bluez-$variant"
	stop_pid "$bluetoothd_pid" 10
	seq=$((seq + 1))
done
# The transmitter through bluetoothd, both forms, following a race-control stand-in:
# - beacond beacon --backend bluez on hci0, zone 7;
# - beacond run's beacon: section (bluez, zone 8) on hci1, the adapter it also scans: it hears zone 7;
# - beacond scan --backend bluez on hci2 hears both.
step "bluez-beacon: bluetoothd -E"
/usr/libexec/bluetooth/bluetoothd -n -d -E >"$results/bluez-beacon-bluetoothd.log" 2>&1 &
bluetoothd_pid=$!
for adapter in hci0 hci1 hci2; do
	wait_for "bluez-beacon: bluetoothd powered $adapter" 30 sh -c "dbus-send --system --print-reply \
		--dest=org.bluez /org/bluez/$adapter org.freedesktop.DBus.Properties.Get string:org.bluez.Adapter1 \
		string:Powered | grep -q 'boolean true'" || exit 1
done
# btvirt sends one report per advertising enable: the scanners start first, so that they hear the
# first frames.
"$beacond" scan --backend bluez --adapter hci2 --json 2>"$results/bluez-scan.err" |
	python3 "$stack/subscribe.py" - "$results/bluez-scan.jsonl" &
scan_pid=$!
wait_for "bluez-beacon: beacond scan up on hci2" 30 grep -q "scanner up" "$results/bluez-scan.err" || exit 1
set_race_control NORMAL "11.3°C"
race_control_start
rc_url=http://127.0.0.1:8080/api/state
printf 'beacon:\n  zone: 8\n  backend: bluez\n  adapter: hci1\n' >/tmp/bluez-beacon.yaml
subscribe_flags=--beacons daemon_start bluez-beacon --backend bluez --config /tmp/bluez-beacon.yaml \
	--remote-url "$rc_url" --poll-interval 0.3 --stale-after 3 || exit 1
"$beacond" beacon --backend bluez --adapter hci0 --zone 7 --remote-url "$rc_url" --stale-after 3 \
	--state-dir /tmp/beacon-bluez-state >"$results/beacon-bluez.log" 2>&1 &
beacon_pid=$!
wait_for "bluez-beacon: zones 7 and 8 normal heard on hci2" 30 \
	scan_heard "$results/bluez-scan.jsonl" 7:normal 8:normal || exit 1
for mode in RED_FLAG EVACUATION; do
	set_race_control "$mode" "11.5°C"
	lower=$(echo "$mode" | tr A-Z a-z)
	wait_for "bluez-beacon: zones 7 and 8 $lower heard on hci2" 30 \
		scan_heard "$results/bluez-scan.jsonl" "7:$lower" "8:$lower" || exit 1
done
race_control_stop
wait_for "bluez-beacon: beacon silent after race control went stale" 20 \
	grep -q "zone 7: silent — race control's state is stale" "$results/beacon-bluez.log"
wait_for "bluez-beacon: the daemon's transmitter silent" 20 sh -c \
	"'$beacond' status --socket /tmp/bluez-beacon.sock --json | grep -q '\"beacon\":{[^}]*\"state\":\"silent\"'"
"$beacond" status --socket /tmp/bluez-beacon.sock --json >"$results/bluez-beacon-status.json"
step "bluez-beacon: SIGTERM to beacon"
stop_pid "$beacon_pid" 10
echo "$?" >"$results/beacon-bluez.rc"
pkill -INT -f "beacond scan --backend bluez" 2>/dev/null
wait "$scan_pid" 2>/dev/null
daemon_stop bluez-beacon
stop_pid "$bluetoothd_pid" 10
step "done"
exit 0
