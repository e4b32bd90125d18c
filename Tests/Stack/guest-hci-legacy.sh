#!/bin/bash
# Boot "legacy": btvirt's LE-only controllers (-L, Bluetooth 4.x: no extended scanning). beacond run
# publishes each flag; SIGTERM disables the scan. Checked on the host by check.py (group legacy).
source "$(dirname "$0")/guest-lib.sh"
start_controllers -L -l2 || exit 1
daemon_start legacy --backend hci || exit 1
advertise legacy safety_car:1:10:3 red_flag:2:10:3 evacuation:3:10:3 || exit 1
daemon_stop legacy
exit 0
