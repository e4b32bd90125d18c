#!/usr/bin/env bash
# Boots the Debian kernel under QEMU (TCG: no KVM needed) with the host's root read-only over 9p
# and runs one scenario script of this folder in the guest (see init). Results, logs and the
# guest's console land in RESULTS (emptied first). Exits with the scenario script's status, or 1
# when the guest did not finish within TIMEOUT seconds; on failure prints the console log and
# every *.log the scenario wrote.
# With --systemd, Debian's systemd is the guest's PID 1 and runs the script as a service (see
# systemd-root).
# Usage: boot.sh [--systemd] SCRIPT RESULTS [TIMEOUT_S]
set -euo pipefail
boot_args=
if [ "$1" = --systemd ]; then
	boot_args="stack.systemd=1 systemd.show_status=1"
	shift
fi
script=$1
results=$2
timeout_s=${3:-240}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# The newest installed kernel that has its modules (not necessarily the running one).
kver=${STACK_KERNEL:-}
if [ -z "$kver" ]; then
	for image in $(ls -1 /boot/vmlinuz-* 2>/dev/null | sort -V -r); do
		kver=${image#/boot/vmlinuz-}
		[ -e "/lib/modules/$kver/modules.dep" ] && break
		kver=
	done
fi
kernel=/boot/vmlinuz-$kver
initramfs=$repo/.build/stack/initramfs-$kver.cpio.gz

if [ -z "$kver" ] || [ ! -r "$kernel" ]; then
	echo "boot.sh: no kernel with modules in /boot (apt-get install linux-image-amd64)"
	exit 1
fi
mkdir -p "$(dirname "$initramfs")"
if [ ! -s "$initramfs" ] || [ "$here/init" -nt "$initramfs" ] || [ "$here/initramfs.sh" -nt "$initramfs" ] ||
	[ "$here/systemd-root" -nt "$initramfs" ]; then
	"$here/initramfs.sh" "$kver" "$initramfs"
fi
rm -rf "$results"
mkdir -p "$results"
results=$(cd "$results" && pwd)

started=$(date +%s%N)
status=0
timeout --kill-after=10 "$timeout_s" qemu-system-x86_64 -accel tcg -cpu max -smp 2 -m 2048 \
	-display none -monitor none -no-reboot -serial "file:$results/console.log" \
	-kernel "$kernel" -initrd "$initramfs" \
	-append "console=ttyS0 panic=-1 loglevel=4 stack.repo=$repo stack.results=$results stack.script=$script $boot_args" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-virtfs "local,path=$results,mount_tag=results,security_model=none,multidevs=remap" || status=$?
elapsed_ms=$((($(date +%s%N) - started) / 1000000))
printf 'boot.sh: %s: guest ran %d.%d s\n' "$script" $((elapsed_ms / 1000)) $((elapsed_ms % 1000 / 100))
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
	echo "boot.sh: $script: the guest did not finish within $timeout_s s"
elif [ "$status" -ne 0 ]; then
	echo "boot.sh: $script: qemu exited $status"
elif [ ! -s "$results/guest-rc" ]; then
	echo "boot.sh: $script: the guest powered off without a result"; status=1
else
	status=$(cat "$results/guest-rc")
	[ "$status" -eq 0 ] || echo "boot.sh: $script: the scenario script exited $status"
fi
if [ "$status" -ne 0 ]; then
	echo "===== guest console ($results/console.log)"
	tail -n 200 "$results/console.log" 2>/dev/null || true
	for log in "$results"/*.log; do
		[ "$log" = "$results/console.log" ] || { echo "===== $log"; tail -n 80 "$log"; }
	done
fi
exit "$status"
