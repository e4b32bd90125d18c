#!/bin/bash
# Boot "hci": btvirt's default controllers (Bluetooth 5.2: extended scanning). Checked on the host
# by check.py (group hci).
source "$(dirname "$0")/guest-lib.sh"
start_controllers -l2 || exit 1

# The daemon, with --record: flags, then the adapter lost twice (hciconfig down/up; the vhci
# device removed and added again) and the controller reset by the kernel (hciconfig reset), a new
# flag after each; SIGTERM.
daemon_start run --backend hci --record "$results/run-record.btsnoop" || exit 1
advertise run safety_car:1:4:3 red_flag:2:4:3 || exit 1
wait_for "run: the flags expired" 20 last_mode_is unknown "$results/run-states.jsonl"
step "run: hciconfig hci1 down"
downs=$(scanner_changes down "$results/run-states.jsonl")
ups=$(scanner_changes up "$results/run-states.jsonl")
hciconfig hci1 down
wait_for "run: scanner down" 20 scanner_state_count $((downs + 1)) down "$results/run-states.jsonl"
step "run: hciconfig hci1 up"
hciconfig hci1 up
wait_for "run: scanner up again" 30 scanner_state_count $((ups + 1)) up "$results/run-states.jsonl"
advertise run red_flag:3:4:3
wait_for "run: the flag expired" 20 last_mode_is unknown "$results/run-states.jsonl"
downs=$(scanner_changes down "$results/run-states.jsonl")
ups=$(scanner_changes up "$results/run-states.jsonl")
stop_controllers
wait_for "run: scanner down (vhci removed)" 20 scanner_state_count $((downs + 1)) down "$results/run-states.jsonl"
start_controllers -l2 || exit 1
wait_for "run: scanner up again (vhci added)" 40 scanner_state_count $((ups + 1)) up "$results/run-states.jsonl"
advertise run evacuation:4:4:3
wait_for "run: the flag expired" 20 last_mode_is unknown "$results/run-states.jsonl"
step "run: hciconfig hci1 reset"
downs=$(scanner_changes down "$results/run-states.jsonl")
ups=$(scanner_changes up "$results/run-states.jsonl")
hciconfig hci1 reset
wait_for "run: scanner down (reset)" 20 scanner_state_count $((downs + 1)) down "$results/run-states.jsonl"
wait_for "run: scanner up again (reset)" 30 scanner_state_count $((ups + 1)) up "$results/run-states.jsonl"
advertise run red_flag:5:4:3
daemon_stop run

# The kernel filter (issue 32), on the extended scan's reports of legacy adverts: another company's
# device advertising is never read until a client asks for every device; then it is listed.
iBeacon=0201061AFF4C000215A1A2A3A4A5A6A7A8A9AAABACADAEAFB000010002C5
daemon_start filter --backend hci || exit 1
advertise filter-phone "ad:$iBeacon:3"
python3 "$stack/ask.py" /tmp/filter.sock "$results/filter-status.json"
advertise filter-flag red_flag:30:4:2
wait_for "filter: the flag published" 20 grep -q '"red_flag"' "$results/filter-states.jsonl"
python3 "$stack/ask.py" /tmp/filter.sock "$results/filter-devices1.json" --devices
advertise filter-phone2 "ad:$iBeacon:3"
python3 "$stack/ask.py" /tmp/filter.sock "$results/filter-devices2.json" --devices
daemon_stop filter

# beacond scan --all --json beside btmon -w.
btmon -w "$results/scan-btmon.btsnoop" >/dev/null 2>&1 &
btmon_pid=$!
"$beacond" scan --backend hci --adapter hci1 --all --json --duration 12 >"$results/scan.jsonl" \
	2>"$results/scan-beacond.log" &
scan_pid=$!
sleep 4 # the scan is up well before: the debug binary starts in about 1 s here
advertise scan safety_car:10:10:3
wait_for "scan: ended" 30 sh -c "! kill -0 $scan_pid"
wait "$scan_pid"
echo "$?" >"$results/scan-beacond.rc"
sleep 0.5
kill -INT "$btmon_pid"
wait "$btmon_pid"

# Capabilities: nobody with only CAP_NET_RAW and CAP_NET_ADMIN (ambient), with CAP_NET_RAW alone, then with none.
setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=+net_raw,+net_admin \
	--ambient-caps=+net_raw,+net_admin "$beacond" scan --backend hci --adapter hci1 --json --duration 10 \
	>"$results/caps-scan.jsonl" 2>"$results/caps-beacond.log" &
caps_pid=$!
sleep 4
advertise caps red_flag:20:10:3
wait_for "caps: ended" 30 sh -c "! kill -0 $caps_pid"
wait "$caps_pid"
echo "$?" >"$results/caps-beacond.rc"
# CAP_NET_RAW alone, as beacond.service grants it: beacond never brings an adapter up.
setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=+net_raw --ambient-caps=+net_raw \
	"$beacond" scan --backend hci --adapter hci1 --json --duration 10 \
	>"$results/rawcap-scan.jsonl" 2>"$results/rawcap-beacond.log" &
rawcap_pid=$!
sleep 4
advertise rawcap red_flag:21:10:3
wait_for "rawcap: ended" 30 sh -c "! kill -0 $rawcap_pid"
wait "$rawcap_pid"
echo "$?" >"$results/rawcap-beacond.rc"
mkdir -p /tmp/nocaps && chown nobody /tmp/nocaps
timeout 30 setpriv --reuid=nobody --regid=nogroup --clear-groups "$beacond" run --backend hci --adapter hci1 \
	--socket /tmp/nocaps/beacond.sock --state-dir /tmp/nocaps >"$results/nocaps-beacond.log" 2>&1
echo "$?" >"$results/nocaps-beacond.rc"

# The transmitter on a 5.x controller: extended advertising commands with a legacy PDU, a hand-set
# red flag, heard by beacond scan on hci1; last, since a controller may refuse the legacy commands
# advertise.py sends once the extended ones were used.
"$beacond" scan --backend hci --adapter hci1 --json --duration 8 >"$results/beacon-scan.jsonl" \
	2>"$results/beacon-scan.log" &
beacon_scan_pid=$!
sleep 3
"$beacond" beacon --adapter hci0 --zone 9 --mode red_flag --state-dir /tmp/beacon9 >"$results/beacon5.log" 2>&1 &
beacon_pid=$!
wait_for "beacon5: advertising" 10 grep -q "zone 9: advertising" "$results/beacon5.log"
kill -TERM "$beacon_pid"
wait "$beacon_pid"
echo "$?" >"$results/beacon5.rc"
wait_for "beacon5: scan ended" 20 sh -c "! kill -0 $beacon_scan_pid"
step "done"
exit 0
