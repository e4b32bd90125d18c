#!/bin/bash
repo=$1; results=$2
exec >"$results/smoke.log" 2>&1
set -x
btvirt -L -l2 & sleep 2
ls -la /sys/class/bluetooth/
hciconfig hci0 up; hciconfig hci1 up
btmgmt info
hciconfig
