#!/bin/bash
# The kiosk part of `make demo`: the daemon replays the race-weekend example at 20x, the terminal
# kiosk follows it in a private tmux server, and a frame of the kiosk is printed every few seconds
# (as text: tmux capture-pane). Usage: demo-kiosk.sh BEACOND EXAMPLE SOCKET STATE_DIR
set -euo pipefail
beacond="$1" example="$2" socket="$3" state_dir="$4"
tmux_server="beacond-demo-$$"

if ! command -v tmux >/dev/null; then
    echo "(tmux is not installed: run 'make deps' to see the terminal kiosk here)"
    exit 0
fi

# The example's zones get names, as a venue's config would give them (zones.names).
config="$state_dir/demo-kiosk.yaml"
printf 'zones:\n  names:\n    1: "Main grandstand"\n    2: "Pit lane"\n    3: "Paddock"\n' >"$config"
"$beacond" run --config "$config" --backend replay --replay "$example" --speed 20 --socket "$socket" \
    --state-dir "$state_dir" --log-level warning &
daemon=$!
cleanup() {
    tmux -L "$tmux_server" kill-server 2>/dev/null || true
    kill -TERM "$daemon" 2>/dev/null || true
    wait "$daemon" 2>/dev/null || true
}
trap cleanup EXIT

tmux -L "$tmux_server" -f /dev/null new-session -d -x 72 -y 20 \
    "env COLORTERM=truecolor $beacond kiosk --socket $socket --steady"

frame() {
    echo "== the terminal kiosk, $1 (72x20; the colours are not shown here)"
    tmux -L "$tmux_server" capture-pane -p | sed 's/[[:space:]]*$//' | sed '/^$/d'
}
sleep 2; frame "40 s into the replay"
sleep 3; frame "100 s into the replay"
sleep 9; frame "after the last beacon expired"
echo "== see it live: $beacond kiosk --socket SOCKET (terminal) or $beacond kiosk --web 127.0.0.1:8080 (browser)"
