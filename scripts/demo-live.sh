#!/usr/bin/env bash
# `make demo-live` and `make demo-stop`: a demo daemon left running in the background, replaying
# the race-weekend example in a loop at 4x (one pass a minute), with race control read from a
# file (out/race-control.json, a copy of examples/race-control.json) that can be edited live.
# Usage: demo-live.sh start|stop BEACOND OUT_DIR
set -euo pipefail
action="$1" beacond="$(realpath -s "$2")" out="$(mkdir -p "$3" && realpath -s "$3")"
pidfile="$out/demo-live.pid" log="$out/demo-live.log" socket="$out/beacond.sock"
capture="$out/race-weekend.btsnoop" config="$out/demo-live.yaml" race_control="$out/race-control.json"
repo="$(cd "$(dirname "$0")/.." && pwd)"

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

stop() {
    if ! running; then
        rm -f "$pidfile"
        echo "no demo daemon is running"
        return
    fi
    local pid
    pid=$(cat "$pidfile")
    kill -TERM "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
        echo "the demo daemon (pid $pid) did not stop within 5 s; its log: $log" >&2
        exit 1
    fi
    rm -f "$pidfile"
    echo "stopped the demo daemon (pid $pid)"
}

commands() {
    cat <<TEXT
A demo daemon runs (pid $(cat "$pidfile")): the race-weekend example in a loop at 4x, one pass a
minute, with race control read from $race_control. Try, each in its own terminal:

  $beacond kiosk --socket $socket
  $beacond kiosk --web 127.0.0.1:8088 --socket $socket    # then open http://127.0.0.1:8088/
  $beacond watch --socket $socket
  $beacond status --socket $socket

Race control: edit $race_control and set "global_mode" (and "message") to
"RED_FLAG", "SC", "EVACUATION" or back to "NORMAL": every screen follows within 2 s.
Its log: $log. Stop it with: make demo-stop
TEXT
}

start() {
    if running; then
        commands
        return
    fi
    "$beacond" example-capture "$capture" >/dev/null
    cp "$repo/examples/race-control.json" "$race_control"
    printf 'zones:\n  names:\n    1: "Main grandstand"\n    2: "Pit lane"\n    3: "Paddock"\n' >"$config"
    # The daemon keeps no descriptor of its starter beyond 0-2, which it does not keep either: a
    # parent that waits for its end of a pipe or socket to close (make, a test) is not held up.
    (
        for fd in /proc/self/fd/*; do
            fd="${fd##*/}"
            if [ "$fd" -gt 2 ]; then eval "exec $fd>&-"; fi
        done
        exec setsid nohup "$beacond" run --config "$config" --backend replay --replay "$capture" --speed 4 --loop \
            --remote-url "file://$race_control" --poll-interval 1 \
            --socket "$socket" --state-dir "$out" >"$log" 2>&1 </dev/null
    ) &
    echo $! >"$pidfile"
    for _ in $(seq 100); do
        if "$beacond" status --socket "$socket" --timeout 1 >/dev/null 2>&1; then
            commands
            return
        fi
        running || break
        sleep 0.1
    done
    echo "the demo daemon did not start; the end of its log ($log):" >&2
    tail -n 5 "$log" >&2
    stop >/dev/null 2>&1 || true
    exit 1
}

case "$action" in
start) start ;;
stop) stop ;;
*) echo "usage: $0 start|stop BEACOND OUT_DIR" >&2; exit 64 ;;
esac
