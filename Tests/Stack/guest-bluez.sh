#!/bin/bash
# Boot "bluez": the D-Bus backend against a real dbus-daemon --system and bluetoothd (5.66 here),
# twice: with bluetoothd's defaults (no Advertisement Monitor interface) and with experimental
# features (-E: beacond registers its monitor). Each time hci0 repeats a red flag (TTL 4 s) every
# 250 ms for 20 s; beacond run --backend bluez must publish it and keep it until the repeats stop.
# Checked on the host by check-bluez.py.
source "$(dirname "$0")/guest-lib.sh"
start_controllers -l2 || exit 1
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
step "done"
exit 0
