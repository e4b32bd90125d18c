#!/usr/bin/env bash
# `make demo`: the bundled race-weekend example (four minutes of beacons) through the real daemon
# at 20x real time, shown as the kiosk shows it. The four flags first, each the moment the kiosk
# shows it (`beacond kiosk --once`, polled), then the race as a timeline, then `beacond status`.
# Usage: demo.sh BEACOND OUT_DIR. Uses its own socket, so a `make demo-live` daemon can keep running.
# DEMO_SPEED (default 20) sets the replay's speed; the tests run it slower on a loaded machine.
set -euo pipefail
beacond="$1" out="$2" speed="${DEMO_SPEED:-20}"
capture="$out/race-weekend.btsnoop" socket="$out/demo.sock" config="$out/demo.yaml"
mkdir -p "$out"
"$beacond" example-capture "$capture" >/dev/null
printf 'zones:\n  names:\n    1: "Main grandstand"\n    2: "Pit lane"\n    3: "Paddock"\n' >"$config"

"$beacond" run --config "$config" --backend replay --replay "$capture" --speed "$speed" \
    --socket "$socket" --state-dir "$out" --log-level error &
daemon=$!
trap 'kill -TERM "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true' EXIT

# Prints the kiosk's frame (64x12, blank rows left out) once its status line says $1.
show() {
    local expected="$1" explanation="$2" frame="" status="" tries=0
    while :; do
        frame=$(COLUMNS=64 LINES=12 "$beacond" kiosk --once --socket "$socket" 2>/dev/null) || true
        status=$(tail -n 1 <<<"$frame" | sed 's/^ *//; s/ *$//')
        [ "$status" = "$expected" ] && break
        tries=$((tries + 1))
        if [ "$tries" -ge 600 ]; then
            echo "demo: the kiosk never showed $expected (last: ${status:-nothing}); is the machine overloaded?" >&2
            exit 1
        fi
        sleep 0.05
    done
    echo "== $explanation"
    sed '/^ *$/d' <<<"$frame"
}

echo "== beacond demo: a race-weekend afternoon replayed at ${speed}x, as a kiosk screen shows it (colours not shown)"
show "SC" "1/4 SAFETY CAR: zone 2's beacon deploys the safety car; screens in range show SC on amber"
show "RED FLAG" "2/4 RED FLAG: zone 3's beacon stops the session; the screen turns red"
show "EVACUATE" "3/4 EVACUATE: zone 1 orders an evacuation; it flashes red and white and outranks every flag"
show "NO SIGNAL" "4/4 NO SIGNAL: the last beacon's time ran out and no race control is set up: never a stale flag"

echo "== the race as a timeline: $beacond replay --timeline $capture"
"$beacond" replay --timeline "$capture"
echo "== the daemon's state at the end: $beacond status --socket $socket"
"$beacond" status --socket "$socket"
echo "== next: 'make demo-live' leaves a demo daemon running for the kiosks, watch and status"
