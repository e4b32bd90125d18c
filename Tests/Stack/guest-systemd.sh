#!/bin/bash
# Boot "systemd": Debian's systemd is PID 1 (boot.sh --systemd) and the package is installed the
# way a venue installs it. dpkg -i with no adapter yet; btvirt's three controllers appear and the
# daemon picks hci0 up; then the unit as shipped (a drop-in only shortens WatchdogSec) runs the
# hci backend on hci1 as the beacond user, with MQTT to a mosquitto on loopback: a red flag from
# hci0, a reload, a phase with every refused system call fatal, the watchdog, socket activation,
# both kiosk units, stop, upgrade, purge.
# Each check is one line in verdicts.log ("ok|FAIL<TAB>check<TAB>detail"); check_systemd.py prints
# them and times the flag from the advert and subscriber logs.
source "$(dirname "$0")/guest-lib.sh"
exec 4>>"$results/verdicts.log"
version=$("$beacond" --version)
deb=$repo/dist/beacond_${version}_amd64.deb
upgrade_deb=$(ls "$repo"/.build/stack/upgrade/beacond_*_amd64.deb 2>/dev/null | head -1)
sock=/run/beacond/beacond.sock
config=/etc/beacond/beacond.yaml
failures=0

# verdict CHECK DETAIL COMMAND...: runs COMMAND once and writes one line for CHECK; 1 when it failed
# (the steps that later ones need end the scenario then: `verdict ... || exit 1`). steps.log gets
# the check with its time too, so a boot cut short by its timeout shows where the time went.
verdict() {
	local name=$1 detail=${2//[$'\t\n']/ }
	shift 2
	if "$@" >>"$results/verdict-commands.log" 2>&1; then
		printf 'ok\t%s\t%s\n' "$name" "$detail" >&4
		step "verdict ok: $name"
	else
		printf 'FAIL\t%s\t%s\n' "$name" "$detail" >&4
		step "verdict FAIL: $name"
		failures=$((failures + 1))
		return 1
	fi
}
# The package's binary (an earlier make install may have left another in /usr/local/bin).
client=/usr/bin/beacond
status_json() { "$client" status --socket "$sock" --json --timeout 2; }
# status_has PYTHON_EXPRESSION: true when the expression holds for the status object `s`.
status_has() { status_json 2>/dev/null | python3 -c "import json, sys; s = json.load(sys.stdin); sys.exit(0 if ($1) else 1)"; }
main_pid() { systemctl show -p MainPID --value beacond.service; }
# beacond_processes: the package's binary running, by any unit or none (pgrep -x on the name).
beacond_processes() { pgrep -x beacond; }
# tty1_shows_red_flag: the console's text (/dev/vcs1) has RED FLAG and most cells' background is
# red (/dev/vcsa1: a 4-byte header, then a character and an attribute byte per cell; VGA colour 4).
tty1_shows_red_flag() {
	python3 - <<'PY'
import collections, sys
text = open("/dev/vcs1", "rb").read().decode("latin-1")
cells = open("/dev/vcsa1", "rb").read()[4:]
backgrounds = collections.Counter((attribute >> 4) & 7 for attribute in cells[1::2])
sys.exit(0 if "RED FLAG" in text and backgrounds.most_common(1)[0][0] == 4 else 1)
PY
}
journal_since() { journalctl --no-pager -o cat --after-cursor="$1" "${@:2}"; }
cursor() { journalctl --no-pager -n 0 --show-cursor | sed -n 's/^-- cursor: //p'; }

step "systemd $(systemctl --version | head -1), booted in $(cut -d' ' -f1 /proc/uptime) s"
[ -s "$deb" ] || { step "no package at $deb (make deb)"; exit 1; }

# 1. The package, installed offline with no adapter present: the daemon starts all the same.
boot_cursor=$(cursor)
verdict "dpkg -i $(basename "$deb") succeeds with no Bluetooth adapter present" "" \
	dpkg -i "$deb" || exit 1
dpkg -L beacond >"$results/package-files.txt"
fragment=$(systemctl show -p FragmentPath --value beacond.service)
verdict "systemctl runs the package's unit, not one from an earlier make install" "$fragment" \
	test "$fragment" = /lib/systemd/system/beacond.service -o "$fragment" = /usr/lib/systemd/system/beacond.service
verdict "installing enabled and started beacond.service: active" "$(systemctl is-enabled beacond.service)" \
	sh -c 'systemctl is-enabled beacond.service && systemctl is-active beacond.service'
verdict "READY=1 arrived (Type=notify reached active) and STATUS= is the daemon's line" \
	"$(systemctl show -p StatusText --value beacond.service)" \
	sh -c 'test "$(systemctl show -p SubState --value beacond.service)" = running &&
		systemctl show -p StatusText --value beacond.service | grep -q .'
verdict "without an adapter the daemon serves its socket and reports the scanner down" \
	"$(status_json | python3 -c 'import json,sys; print(json.load(sys.stdin)["scanner"].get("detail"))' 2>/dev/null)" \
	status_has 's["scanner"]["state"] == "down" and "hci0" in s["scanner"]["detail"]'

# 2. The adapter appears: picked up without a restart (the same process).
pid=$(main_pid)
start_controllers -l3 || exit 1
adapter_up hci2 || exit 1
scanning_in_the_same_process() { test "$(main_pid)" = "$pid" && status_has 's["scanner"]["state"] == "up"'; }
verdict "the daemon picked hci0 up when it appeared, without a restart" "pid $pid" \
	wait_for "scanner up on hci0" 40 scanning_in_the_same_process

# 3. The venue's settings (an edited conffile), a test drop-in for a short watchdog, MQTT on loopback.
mosquitto -p 1883 >"$results/mosquitto.log" 2>&1 &
mosquitto_pid=$!
wait_for "mosquitto listening" 10 sh -c 'ss -ltn | grep -q ":1883 "' || exit 1
mosquitto_sub -h 127.0.0.1 -v -t 'georacing/#' >"$results/mqtt.log" 2>&1 &
mqtt_sub_pid=$!
cat >/srv/race-control.json <<'JSON'
{"mode": "NORMAL", "temperature": "11.0°C"}
JSON
chmod 0644 /srv/race-control.json
cat >"$config" <<'YAML'
# The real-stack test's settings (guest-systemd.sh).
scanner:
  adapter: hci1
fusion:
  min_rssi: -60
remote:
  url: file:///srv/race-control.json
  poll_interval: 0.5
mqtt:
  url: mqtt://127.0.0.1:1883
  node: stack
YAML
cp "$config" "$results/beacond.yaml"
mkdir -p /etc/systemd/system/beacond.service.d
printf '[Service]\nWatchdogSec=4s\n' >/etc/systemd/system/beacond.service.d/stack-watchdog.conf
systemctl daemon-reload
systemctl restart beacond.service
pid=$(main_pid)
scanning_hci1_as_beacond() {
	test "$pid" != 0 && test "$(ps -o user= -p "$pid")" = beacond &&
		wait_for "scanner up on hci1" 30 status_has 's["scanner"]["state"] == "up"'
}
verdict "restarted with the edited config: scanning hci1 as user beacond" "$(ps -o user=,comm= -p "$pid")" \
	scanning_hci1_as_beacond
verdict "the daemon's only capability is CAP_NET_RAW (ambient and effective)" \
	"$(grep -E '^Cap(Eff|Amb|Bnd)' "/proc/$pid/status" 2>/dev/null | tr '\n\t' '  ')" \
	sh -c "grep -q '^CapEff:.*0000000000002000$' /proc/$pid/status &&
		grep -q '^CapAmb:.*0000000000002000$' /proc/$pid/status"

# 4. A red flag from hci0 reaches a member of the beacond group on the socket.
id kiosk >/dev/null 2>&1 || useradd --no-create-home --groups beacond --shell /usr/sbin/nologin kiosk
install -m 0666 /dev/null "$results/systemd-states.jsonl" # the kiosk user writes it
setpriv --reuid=kiosk --regid=kiosk --init-groups \
	python3 "$stack/subscribe.py" "$sock" "$results/systemd-states.jsonl" --wait 20 \
	2>>"$results/systemd-subscribe.log" &
subscriber_pid=$!
wait_for "subscriber connected" 20 grep -q '"type": "state"' "$results/systemd-states.jsonl" || exit 1
advertiser=hci0 advertise systemd --zone 7 red_flag:40:60:3 || exit 1
wait_for "red flag published" 10 last_mode_is red_flag "$results/systemd-states.jsonl"
verdict "MQTT: the red flag reached the broker (georacing/stack/state)" "" \
	wait_for "red flag on MQTT" 10 grep -q '^georacing/stack/state .*"red_flag"' "$results/mqtt.log"

# 5. Reload: zone 7 gets a name; the running daemon publishes it.
printf 'zones:\n  names:\n    7: "Turn 7 grandstand"\n' >>"$config"
systemctl reload beacond.service
verdict "systemctl reload applied a config change (zone 7 renamed in a published state)" \
	"reloads $(status_json | python3 -c 'import json,sys; print(json.load(sys.stdin)["config"]["reloads"])' 2>/dev/null)" \
	wait_for "zone name published" 10 grep -q '"zone_name": "Turn 7 grandstand"' "$results/systemd-states.jsonl"

# 6. What the sandbox refused or the daemon complained about, so far.
journal_since "$boot_cursor" -u beacond.service >"$results/journal-beacond-run.log"
journal_since "$boot_cursor" -k >"$results/journal-kernel.log"
verdict "the daemon's journal has no Failed, no EPERM, no errno=1, no Operation not permitted" "" \
	sh -c "! grep -E 'Failed|EPERM|errno=1|Operation not permitted' '$results/journal-beacond-run.log'"
verdict "the kernel logged no seccomp action" "" \
	sh -c "! grep -Ei 'seccomp|type=1326' '$results/journal-kernel.log'"
# The same with every refusal fatal (SystemCallErrorNumber=kill: SIGSYS, and the kernel logs it),
# but for Dispatch's setpriority: a restart, a red flag, a reload and MQTT call nothing else the
# filter refuses.
mkdir -p /etc/systemd/system/beacond.service.d
printf '[Service]\nSystemCallFilter=setpriority\nSystemCallErrorNumber=kill\n' \
	>/etc/systemd/system/beacond.service.d/stack-strict.conf
systemctl daemon-reload
strict_cursor=$(cursor)
systemctl restart beacond.service
pid=$(main_pid)
advertiser=hci0 advertise strict --zone 7 red_flag:41:60:2
wait_for "strict: red flag published" 10 status_has 's["state"]["mode"] == "red_flag"'
systemctl reload beacond.service
wait_for "strict: reloaded" 10 status_has 's["config"]["reloads"] == 1'
journal_since "$strict_cursor" -k >"$results/journal-strict-kernel.log"
verdict "with refusals fatal (but setpriority), the daemon ran, reloaded and published: no seccomp kill" \
	"pid $pid" sh -c "test \"\$(systemctl show -p MainPID --value beacond.service)\" = $pid &&
		systemctl is-active beacond.service && ! grep -Ei 'seccomp|type=1326' '$results/journal-strict-kernel.log'"
rm /etc/systemd/system/beacond.service.d/stack-strict.conf
systemctl daemon-reload
systemctl restart beacond.service
systemd-analyze security --no-pager beacond.service >"$results/security-online.txt" 2>&1
systemd-analyze security --no-pager --offline=yes /lib/systemd/system/beacond.service \
	>"$results/security-offline.txt" 2>&1

# 7. The watchdog: a stopped daemon is killed and restarted within WatchdogSec (4 s) plus a margin.
old_pid=$(main_pid)
watchdog_cursor=$(cursor)
stopped_at=$SECONDS
kill -STOP "$old_pid"
verdict "SIGSTOP: systemd's watchdog killed and restarted the daemon within 4 s + 8 s" "old pid $old_pid" \
	wait_for "a new daemon after the watchdog" 12 sh -c \
	"test \"\$(systemctl show -p MainPID --value beacond.service)\" != $old_pid &&
		systemctl is-active beacond.service && ! kill -0 $old_pid"
step "watchdog: new daemon $(main_pid) $((SECONDS - stopped_at)) s after SIGSTOP"
verdict "after the watchdog restart a client sees the daemon again" "" \
	wait_for "status answers after the restart" 20 setpriv --reuid=kiosk --regid=kiosk --init-groups \
	"$client" status --socket "$sock" --timeout 2
journal_since "$watchdog_cursor" -u beacond.service >"$results/journal-watchdog.log"
verdict "the journal names the watchdog and a dumped (not hung) process" "" \
	sh -c "grep -q 'Watchdog timeout' '$results/journal-watchdog.log' &&
		grep -Eq 'code=dumped, status=6/ABRT|status=6/ABRT' '$results/journal-watchdog.log'"

# 8. Socket activation: the service stopped, a client's connect starts it.
systemctl stop beacond.service
systemctl enable --now beacond.socket
verdict "socket activation: the service is stopped and the socket listens" "" \
	sh -c '! systemctl is-active beacond.service && systemctl is-active beacond.socket'
verdict "socket activation: a client's connect started the daemon and got a state" "" \
	sh -c "setpriv --reuid=kiosk --regid=kiosk --init-groups $client status --socket $sock --json --timeout 20 |
		grep -q '\"type\":\"status\"' && systemctl is-active beacond.service"

# 9. The kiosk units, with race control's red flag.
printf '{"mode": "RED_FLAG", "temperature": "11.0°C"}\n' >/srv/race-control.json
wait_for "race control's red flag published" 10 status_has 's["state"]["mode"] == "red_flag"' ||
	status_json >"$results/status-before-kiosks.json"
systemctl start beacond-kiosk@tty1.service
verdict "beacond-kiosk@tty1 draws the red flag on tty1: RED FLAG in its status row, most cells on red" "" \
	wait_for "red flag on tty1" 20 tty1_shows_red_flag
python3 -c 'import sys; t = open("/dev/vcsu1", "rb").read().decode("utf-32-le"); [print(t[i:i + 80]) for i in range(0, len(t), 80)]' \
	>"$results/tty1.txt" 2>&1
systemctl start beacond-kiosk-web.service
verdict "beacond-kiosk-web serves /state with the red flag" "" \
	wait_for "web kiosk state" 20 sh -c 'curl -fsS --max-time 2 http://127.0.0.1:8088/state | grep -q red_flag'
# The package's catalogues (/usr/share/beacond/languages), found by the package's binary: a kiosk
# configured for Catalan says the red flag in Catalan.
printf 'kiosk:\n  languages: [ca]\n' >/tmp/kiosk-ca.yaml
verdict "the package's catalogues: kiosk.languages [ca] shows BANDERA VERMELLA" "" \
	sh -c "COLUMNS=80 LINES=24 setpriv --reuid=kiosk --regid=kiosk --init-groups \
		$client kiosk --once --config /tmp/kiosk-ca.yaml --socket $sock | tail -n 1 | grep -q 'BANDERA VERMELLA'"

# 10. Stop leaves no process behind.
systemctl stop beacond-kiosk@tty1.service beacond-kiosk-web.service beacond.socket beacond.service
verdict "systemctl stop leaves no beacond process" "$(beacond_processes | tr '\n' ' ')" \
	wait_for "no beacond process" 10 sh -c '! pgrep -x beacond'

# 11. Upgrade to a package with a higher version: the edited config stays, one restart.
systemctl start beacond.service
cp "$config" /tmp/config-before-upgrade
upgrade_cursor=$(cursor)
verdict "dpkg -i of the upgrade $(basename "${upgrade_deb:-none}") succeeds" "" dpkg -i "$upgrade_deb"
journal_since "$upgrade_cursor" -u beacond.service >"$results/journal-upgrade.log"
starts=$(grep -c 'Started beacond.service\|Started GeoRacing track-status daemon' "$results/journal-upgrade.log")
verdict "the upgrade kept the edited config" "" cmp /tmp/config-before-upgrade "$config"
verdict "the upgrade restarted the daemon once" "$starts start(s)" \
	sh -c "test $starts = 1 && systemctl is-active beacond.service"

# 12. Purge: none of the package's files, no process, no state; the system user stays.
verdict "dpkg --purge succeeds" "" dpkg --purge beacond
left=$(while read -r path; do [ -f "$path" ] && echo "$path"; done <"$results/package-files.txt")
verdict "purge left none of the package's files" "$(echo $left | cut -c1-200)" test -z "$left"
verdict "purge removed /etc/beacond and /var/lib/beacond, and no beacond process runs" "" \
	sh -c '! test -e /etc/beacond && ! test -e /var/lib/beacond && ! pgrep -x beacond'
verdict "the beacond system user stays (Debian never removes system users)" "" getent passwd beacond

kill "$subscriber_pid" "$mqtt_sub_pid" "$mosquitto_pid" 2>/dev/null

stop_controllers
step "done: $failures failed"
exit 0
