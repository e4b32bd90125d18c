# Shared by the guest scenario scripts (sourced; runs in the chroot of the host's root, as root).
# Every wait is bounded; each step is logged to $results/steps.log with the guest's uptime.
set -u
repo=$1
results=$2
# The static release binary (make release), the one the Debian package carries.
beacond=$repo/.build-release/release/beacond
stack=$repo/Tests/Stack
btvirt_pid=
exec 3>>"$results/steps.log"

step() { echo "$(cut -d' ' -f1 /proc/uptime) $*" >&3; }

# wait_for DESCRIPTION SECONDS COMMAND...: polls COMMAND every 0.2 s; 1 after SECONDS.
wait_for() {
	local what=$1 seconds=$2 deadline
	shift 2
	deadline=$((SECONDS + seconds))
	while ! "$@" >/dev/null 2>&1; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			step "TIMEOUT after ${seconds}s: $what"
			return 1
		fi
		sleep 0.2
	done
	step "ok: $what"
}

# Starts btvirt with OPTIONS and brings its controllers up: hci0 and hci1, and hci2 with -l3.
# hci0 advertises, hci1 (and hci2) scan.
start_controllers() {
	step "btvirt $*"
	btvirt "$@" >>"$results/btvirt.log" 2>&1 &
	btvirt_pid=$!
	wait_for "hci0 and hci1 registered" 20 \
		test -e /sys/class/bluetooth/hci0 -a -e /sys/class/bluetooth/hci1 || return 1
	adapter_up hci0 && adapter_up hci1 || return 1
	if [[ " $* " == *" -l3 "* ]]; then
		wait_for "hci2 registered" 20 test -e /sys/class/bluetooth/hci2 || return 1
		adapter_up hci2 || return 1
	fi
	hciconfig -a >>"$results/hciconfig.log" 2>&1 || true # LE-only controllers have no local name
}

# The kernel powers a new controller on by itself (and off again 2 s later when nobody claims it):
# HCIDEVUP fails while that runs, so it is retried; it also cancels the automatic power-off.
adapter_up() {
	wait_for "$1 up" 10 sh -c "hciconfig $1 up 2>/dev/null; hciconfig $1 | grep -q 'UP RUNNING'"
}

stop_controllers() {
	step "btvirt stopped"
	kill "$btvirt_pid" 2>/dev/null
	wait "$btvirt_pid" 2>/dev/null
	wait_for "hci1 removed" 20 test ! -e /sys/class/bluetooth/hci1 -a ! -e /sys/class/bluetooth/hci2
}

# set_race_control MODE TEMPERATURE: what the race-control stand-in (racecontrol.py) serves from now.
rc_state=/tmp/racecontrol.json
set_race_control() {
	step "race control: $1 $2"
	python3 "$stack/racecontrol.py" set "$rc_state" "$results/racecontrol.jsonl" "$1" "$2"
}

# race_control_start: serves $rc_state on 127.0.0.1:8080 (rc_pid); set a state first.
race_control_start() {
	python3 "$stack/racecontrol.py" serve 8080 "$rc_state" 2>>"$results/racecontrol.log" &
	rc_pid=$!
}

race_control_stop() {
	step "race control: stopped"
	kill "$rc_pid"
	wait "$rc_pid" 2>/dev/null
}

# advertise NAME STEP...: hci0 advertises (see advertise.py); times go to $results/NAME-adverts.jsonl.
advertise() {
	local name=$1
	shift
	step "advertise $name: $*"
	python3 "$stack/advertise.py" --adapter "${advertiser:-hci0}" --log "$results/$name-adverts.jsonl" "$@" \
		2>>"$results/advertise.log"
}

# scanner_state_count N STATE FILE: the daemon whose subscriber writes FILE published the scanner
# turning STATE ("up", "down") at least N times (its first state counts as a change).
scanner_state_count() {
	python3 - "$@" <<'PY'
import json, sys
wanted, state, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
changes, last = 0, None
for line in open(path):
    message = json.loads(line)["msg"]
    if message.get("type") == "state":
        current = message["scanner"]["state"]
        changes += current == state and current != last
        last = current
sys.exit(0 if changes >= wanted else 1)
PY
}
# scanner_changes STATE FILE: how many times so far (scanner_state_count's count). A wait for one
# more after an action then holds whether or not the subscriber saw the daemon's first state.
scanner_changes() {
	local count=0
	while scanner_state_count $((count + 1)) "$1" "$2"; do count=$((count + 1)); done
	echo "$count"
}
# scan_heard FILE ZONE:MODE...: the stamped `beacond scan --json` lines in FILE include a v1
# frame of each ZONE with its MODE (grep, not python: it runs every 0.2 s under TCG; the signal's
# fields keep their documented order, docs/replay-json.md).
scan_heard() {
	local file=$1 heard
	shift
	for heard in "$@"; do
		grep -q "\"zone\": ${heard%%:*}, \"mode\": \"${heard#*:}\"" "$file" || return 1
	done
}
# last_mode_is MODE FILE: the last state the subscriber wrote to FILE has MODE.
last_mode_is() {
	local mode
	mode=$(grep -F '"type": "state"' "$2" | tail -1 |
		python3 -c 'import json, sys; print(json.loads(sys.stdin.read())["msg"]["mode"])')
	[ "$mode" = "$1" ]
}

# last_scanner_is STATE FILE: the last state the subscriber wrote to FILE has the scanner in STATE.
last_scanner_is() {
	local state
	state=$(grep -F '"type": "state"' "$2" | tail -1 |
		python3 -c 'import json, sys; print(json.loads(sys.stdin.read())["msg"]["scanner"]["state"])')
	[ "$state" = "$1" ]
}

# stop_pid PID SECONDS: SIGTERM, then waits at most SECONDS for it to end; SIGKILL after that.
stop_pid() {
	local pid=$1 seconds=$2
	kill -TERM "$pid" 2>/dev/null
	if ! wait_for "pid $pid ended after SIGTERM" "$seconds" sh -c "! kill -0 $pid"; then
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
}

# daemon_launch NAME ARGUMENTS...: btmon records everything beside it; beacond run (on hci1, or
# on the adapters daemon_adapters names; RSSI floor -60 dBm, which btvirt's "not available" 127
# must pass; ARGUMENTS add the backend) and a subscriber writing what it publishes to
# $results/NAME-states.jsonl. daemon_start NAME ARGUMENTS... then waits for the scanner to be up.
daemon_launch() {
	local name=$1
	shift
	btmon -w "$results/$name-btmon.btsnoop" >/dev/null 2>&1 &
	btmon_pid=$!
	mkdir -p "/tmp/$name-state"
	# shellcheck disable=SC2086 # daemon_adapters holds flags
	"$beacond" run ${daemon_adapters:---adapter hci1} --socket "/tmp/$name.sock" --state-dir "/tmp/$name-state" \
		--min-rssi -60 --log-level debug "$@" >"$results/$name-beacond.log" 2>&1 &
	daemon_pid=$!
	python3 "$stack/subscribe.py" "/tmp/$name.sock" "$results/$name-states.jsonl" --wait 60 ${subscribe_flags:-} \
		2>>"$results/$name-subscribe.log" &
	subscriber_pid=$!
}

daemon_start() {
	daemon_launch "$@"
	wait_for "$1: scanner up" 60 scanner_state_count 1 up "$results/$1-states.jsonl"
}

daemon_stop() {
	local name=$1
	step "$name: SIGTERM to beacond"
	stop_pid "$daemon_pid" 20
	echo "$?" >"$results/$name-beacond.rc"
	wait_for "$name: subscriber saw bye" 10 sh -c "! kill -0 $subscriber_pid"
	kill "$subscriber_pid" 2>/dev/null
	sleep 0.5 # btmon writes the scan disable's answer
	kill -INT "$btmon_pid" 2>/dev/null
	wait "$btmon_pid" 2>/dev/null
}
